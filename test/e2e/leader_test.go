package e2e

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/testenv"
)

// The shipped mode: `gpunode controller` as the chart runs it, with leader election on,
// through an API server outage longer than the Lease's renew deadline. The controller must
// not exit (it used to, 20 s in, and a lost GPU stayed unheld for a crash-loop backoff): it
// campaigns again, and a GPU lost during the outage is held once the API server is back.
func TestTheLeaderElectedControllerOutlivesAnAPIServerOutage(t *testing.T) {
	cfg, c := testenv.Start(t)
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newOutageProxy(t, u.Host)
	via := rest.CopyConfig(cfg)
	via.Host = "https://" + proxy.Addr()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gpunode-system"}}
	if err := c.Create(t.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	f := newRemFleetVia(t, "leader-outage", 2, 100*time.Millisecond, via, v1alpha1.RemediationPolicy{})

	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan int, 1)
	go func() {
		exited <- cli.Execute(ctx, []string{"controller", "--kubeconfig", kubeconfigFor(t, via), "--leader-elect=true",
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--log-level", "warn"}, io.Discard, os.Stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-exited; code != 0 && !t.Failed() {
			t.Errorf("the controller exited %d when stopped", code)
		}
	})
	f.inService(2 * time.Minute)
	n := f.nodes[0]

	outage := remediationOutage()
	over := make(chan struct{})
	go func() { defer close(over); proxy.Outage(outage) }()
	time.Sleep(2 * time.Second)
	n.inject(t, 3, 79)
	select {
	case code := <-exited:
		exited <- code // for the cleanup
		t.Fatalf("the controller exited %d during the outage", code)
	case <-over:
	}
	back := time.Now()
	f.eventually(2*time.Minute, "the node with the lost GPU held after the outage", func() error {
		select {
		case code := <-exited:
			exited <- code
			return fmt.Errorf("the controller exited %d", code)
		default:
		}
		if !f.heldByRemediation(n.name) {
			return fmt.Errorf("%s not held by remediation", n.name)
		}
		return nil
	})
	t.Logf("after the %s outage the node with the lost GPU was held %.1f s after the API server returned", outage, time.Since(back).Seconds())
}

// kubeconfigFor writes a kubeconfig file for cfg.
func kubeconfigFor(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
