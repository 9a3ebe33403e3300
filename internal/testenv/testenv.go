// Package testenv runs a real kube-apiserver and etcd for integration tests
// (controller-runtime's envtest) with gpunode's CRDs from config/crd installed.
//
// One API server serves a whole test package: the package's TestMain calls Run, and every
// test calls Start, which starts the server on first use and returns the shared config
// and client. Run stops the server after the last test.
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
//
// The binaries come from KUBEBUILDER_ASSETS (hack/k8s-test-assets.sh builds them). Without
// it a test is skipped with the reason, except under CI=true, where it fails: in CI the
// API-server tests must run.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// SkipReason is why a test is skipped when the API server binaries are not available.
const SkipReason = "KUBEBUILDER_ASSETS not set: run `export KUBEBUILDER_ASSETS=$(bash hack/k8s-test-assets.sh)`"

// startTimeout bounds the control plane's start; a cold start on a 2-core machine takes
// several seconds, and a loaded CI machine more.
const startTimeout = 2 * time.Minute

// shared is the package's one API server.
var shared struct {
	sync.Mutex
	inRun   bool
	started bool
	env     *envtest.Environment
	cfg     *rest.Config
	client  client.Client
	err     error
	took    time.Duration
}

// Run runs the package's tests and then stops the API server if one was started. Call it
// from TestMain and exit with its code.
func Run(m *testing.M) int {
	shared.Lock()
	shared.inRun = true
	shared.Unlock()
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stopping the API server: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Start returns a config and a client for the package's API server, starting it on first
// use. It skips t when KUBEBUILDER_ASSETS is not set (fails under CI=true), and fails t
// when the server cannot start or Run is not the package's TestMain.
func Start(t testing.TB) (*rest.Config, client.Client) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(SkipReason + " (CI=true: the API-server tests must run, not skip)")
		}
		t.Skip(SkipReason)
	}
	shared.Lock()
	defer shared.Unlock()
	if !shared.inRun {
		t.Fatal("testenv.Start needs testenv.Run as the package's TestMain, which stops the API server: " +
			"func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }")
	}
	if !shared.started {
		shared.started = true
		t0 := time.Now()
		shared.env, shared.cfg, shared.client, shared.err = start()
		shared.took = time.Since(t0)
		if shared.err == nil {
			t.Logf("testenv: API server started in %s", shared.took.Round(time.Millisecond))
		}
	}
	if shared.err != nil {
		t.Fatalf("testenv: %v", shared.err)
	}
	return shared.cfg, shared.client
}

// StartupTime is how long the package's API server took to start (0 before it has).
func StartupTime() time.Duration {
	shared.Lock()
	defer shared.Unlock()
	return shared.took
}

// Scheme is the scheme of Start's client: the built-in kinds, CRDs and gpunode's kinds.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building the test scheme: %w", err)
		}
	}
	return s, nil
}

func start() (*envtest.Environment, *rest.Config, client.Client, error) {
	crdDir, err := crdDirectory()
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := Scheme()
	if err != nil {
		return nil, nil, nil, err
	}
	env := &envtest.Environment{
		Scheme:                   s,
		CRDDirectoryPaths:        []string{crdDir},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: startTimeout,
	}
	cfg, err := env.Start()
	if err != nil {
		// A half-started control plane still has processes to end.
		return nil, nil, nil, errors.Join(
			fmt.Errorf("starting kube-apiserver and etcd from KUBEBUILDER_ASSETS=%s: %w", os.Getenv("KUBEBUILDER_ASSETS"), err),
			env.Stop())
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, nil, nil, errors.Join(fmt.Errorf("creating a client for %s: %w", cfg.Host, err), env.Stop())
	}
	return env, cfg, c, nil
}

func stop() error {
	shared.Lock()
	defer shared.Unlock()
	if shared.env == nil || shared.err != nil {
		return nil
	}
	err := shared.env.Stop()
	shared.env = nil
	return err
}

// crdDirectory finds config/crd in the module root, the first folder above the working
// directory (the test's package folder) that holds go.mod.
func crdDirectory() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding config/crd: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "config", "crd"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding config/crd: no go.mod above the working directory")
		}
		dir = parent
	}
}
