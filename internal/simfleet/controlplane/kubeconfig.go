package controlplane

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigName is the kubeconfig's cluster, user and context name.
const KubeconfigName = "gpunode-sim"

// kubeconfigFor is a kubeconfig file for cfg's server and client certificate.
func kubeconfigFor(cfg *rest.Config) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[KubeconfigName] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[KubeconfigName] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts[KubeconfigName] = &clientcmdapi.Context{Cluster: KubeconfigName, AuthInfo: KubeconfigName}
	kc.CurrentContext = KubeconfigName
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("writing the kubeconfig of %s: %w", cfg.Host, err)
	}
	return b, nil
}
