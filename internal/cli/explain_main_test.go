package cli

import (
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpunode/gpunode/internal/testenv"
)

// The explain and release tests run against the package's test API server (testenv).
func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// kubeconfigFor writes a kubeconfig file for cfg, as a person would point --kubeconfig at.
func kubeconfigFor(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, t.TempDir(), "kubeconfig", string(b))
}
