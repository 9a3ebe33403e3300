package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Defaults of Config.
const (
	DefaultStartTimeout = 2 * time.Minute
	DefaultStopTimeout  = 20 * time.Second
)

// Binary names in the assets folder.
const (
	EtcdBinary      = "etcd"
	APIServerBinary = "kube-apiserver"
)

// Config describes a control plane.
type Config struct {
	// Assets is the folder that holds the etcd and kube-apiserver binaries. Required.
	Assets string
	// Dir holds the certificates and etcd's data. Default: a new temporary folder,
	// removed by Stop; a given folder is kept.
	Dir string
	// StartTimeout bounds each process's start (default DefaultStartTimeout: a cold
	// start on a loaded 2-core machine takes tens of seconds).
	StartTimeout time.Duration
	// StopTimeout is how long each process has to exit after SIGTERM, and then after
	// SIGKILL (default DefaultStopTimeout).
	StopTimeout time.Duration
	// Output receives both processes' stdout and stderr (default: discarded, but the
	// end of it is quoted when a process fails to start).
	Output io.Writer
}

// ControlPlane is a running etcd and kube-apiserver. Start makes one; Stop ends it.
type ControlPlane struct {
	cfg        Config
	ownDir     bool
	ports      ports
	pki        *pki
	etcd       *process
	apiServer  *process
	rest       *rest.Config
	kubeconfig []byte
	stopOnce   sync.Once
	stopErr    error
}

// Start runs etcd and kube-apiserver from cfg.Assets and returns once the API server is
// ready and its default namespace exists. ctx bounds the start only: the processes run
// until Stop. On error everything started is stopped.
func Start(ctx context.Context, cfg Config) (_ *ControlPlane, err error) {
	if cfg.Assets == "" {
		return nil, errors.New("starting a control plane: no assets folder")
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	c := &ControlPlane{cfg: cfg}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
		}
	}()
	if err := c.prepareDir(); err != nil {
		return nil, err
	}
	if c.ports, err = freePorts(); err != nil {
		return nil, err
	}
	if err := c.writePKI(); err != nil {
		return nil, err
	}
	if err := c.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := c.startAPIServer(ctx); err != nil {
		return nil, err
	}
	if c.kubeconfig, err = kubeconfigFor(c.rest); err != nil {
		return nil, err
	}
	return c, nil
}

// RESTConfig is a config for the admin user (group system:masters); each call returns
// a copy.
func (c *ControlPlane) RESTConfig() *rest.Config { return rest.CopyConfig(c.rest) }

// Kubeconfig is a kubeconfig file's content for the admin user.
func (c *ControlPlane) Kubeconfig() []byte { return c.kubeconfig }

// Dir is the folder of the certificates and etcd's data.
func (c *ControlPlane) Dir() string { return c.cfg.Dir }

// Stop stops kube-apiserver and then etcd, and removes the folder when Start made it.
// It returns what went wrong, including a process that had exited by itself.
func (c *ControlPlane) Stop() error {
	c.stopOnce.Do(func() {
		var errs []error
		for _, p := range []*process{c.apiServer, c.etcd} {
			if p != nil {
				errs = append(errs, p.stop(c.cfg.StopTimeout))
			}
		}
		if c.ownDir {
			if err := os.RemoveAll(c.cfg.Dir); err != nil {
				errs = append(errs, fmt.Errorf("removing the control plane's folder: %w", err))
			}
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

func (c *ControlPlane) prepareDir() error {
	if c.cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "gpunode-controlplane-")
		if err != nil {
			return fmt.Errorf("creating the control plane's folder: %w", err)
		}
		c.cfg.Dir, c.ownDir = dir, true
	}
	for _, d := range []string{c.cfg.Dir, filepath.Join(c.cfg.Dir, pkiDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating the control plane's folder %s: %w", d, err)
		}
	}
	return nil
}

// writePKI generates the key material and writes what the API server reads.
func (c *ControlPlane) writePKI() error {
	p, err := newPKI(Host, time.Now())
	if err != nil {
		return err
	}
	c.pki = p
	for name, b := range map[string][]byte{
		caCertFile: p.caCert, servingCertFile: p.servingCert, servingKeyFile: p.servingKey,
		saPublicFile: p.saPublic, saKeyFile: p.saKey,
	} {
		path := filepath.Join(c.cfg.Dir, pkiDir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

func (c *ControlPlane) startEtcd(ctx context.Context) error {
	path := filepath.Join(c.cfg.Assets, EtcdBinary)
	args := etcdArgs(c.cfg.Dir, c.ports, hasFlag(ctx, path, "unsafe-no-fsync"))
	p, err := startProcess(EtcdBinary, path, args, c.cfg.Output)
	if err != nil {
		return err
	}
	c.etcd = p
	check := httpCheck(nil, c.ports.etcdURL()+"/health")
	if err := p.waitReady(ctx, c.cfg.StartTimeout, check); err != nil {
		return fmt.Errorf("starting etcd from %s: %w", c.cfg.Assets, err)
	}
	return nil
}

func (c *ControlPlane) startAPIServer(ctx context.Context) error {
	path := filepath.Join(c.cfg.Assets, APIServerBinary)
	p, err := startProcess(APIServerBinary, path, apiServerArgs(c.cfg.Dir, c.ports), c.cfg.Output)
	if err != nil {
		return err
	}
	c.apiServer = p
	c.rest = &rest.Config{
		Host: c.ports.apiServerURL(),
		TLSClientConfig: rest.TLSClientConfig{
			CAData: c.pki.caCert, CertData: c.pki.adminCert, KeyData: c.pki.adminKey,
		},
	}
	hc, err := rest.HTTPClientFor(c.rest)
	if err != nil {
		return fmt.Errorf("creating an HTTP client for %s: %w", c.rest.Host, err)
	}
	// Ready, and the default namespace created (the API server's own controller does
	// that shortly after it is ready; clients expect it).
	ready := httpCheck(hc, c.rest.Host+"/readyz")
	defaultNS := httpCheck(hc, c.rest.Host+"/api/v1/namespaces/default")
	check := func(ctx context.Context) error { return errors.Join(ready(ctx), defaultNS(ctx)) }
	if err := p.waitReady(ctx, c.cfg.StartTimeout, check); err != nil {
		return fmt.Errorf("starting kube-apiserver from %s: %w", c.cfg.Assets, err)
	}
	return nil
}
