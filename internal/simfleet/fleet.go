package simfleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/simfleet/controlplane"
)

// Defaults of Config.
const (
	DefaultInterval = 2 * time.Second
	// MaxNodes bounds a fleet: every node is an agent and a simulated GPU set in this
	// process.
	MaxNodes = 1000
	// PolicyName is the GPUNodePolicy the fleet creates for its nodes.
	PolicyName = "sim-fleet"
	// LabelFleet marks the fleet's Nodes.
	LabelFleet = "gpunode.dev/sim-fleet"
)

// Files in the state folder.
const (
	KubeconfigFile = "kubeconfig"
	SocketFile     = "fleet.sock"
	LogFile        = "fleet.log"
	// ControlPlaneLogFile receives the output of the fleet's etcd and kube-apiserver.
	ControlPlaneLogFile = "controlplane.log"
	nodesDir            = "nodes"
)

// Config describes a fleet.
type Config struct {
	// Nodes is how many simulated nodes join (1 to MaxNodes).
	Nodes int
	// Scenario is every node's GPUs and timed faults; each node gets its own GPU UUIDs
	// and serials (sim.Scenario.Reseed with its name). Required.
	Scenario *sim.Scenario
	// Interval is how often the agents publish and poll (default DefaultInterval).
	Interval time.Duration
	// StateDir holds the kubeconfig, the control socket, the nodes' journals and
	// evidence and the log. Required; its path must be short enough for a unix socket.
	StateDir string
	// Assets is the folder of kube-apiserver and etcd (default: FindAssets).
	Assets string
	// Log receives the controller's and the agents' logs (default: LogFile in StateDir).
	Log *slog.Logger
}

// Fleet is a running simulated fleet. Start makes one; Stop ends it.
type Fleet struct {
	cfg      Config
	cp       *controlplane.ControlPlane
	cpLog    *os.File
	rest     *rest.Config
	client   client.Client
	nodes    []*simNode
	byName   map[string]*simNode
	logFile  *os.File
	started  time.Time
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	runErrs  []error
	stopOnce sync.Once
	stopErr  error
}

// NodeName is the name of the fleet's node i (0-based).
func NodeName(i int) string { return fmt.Sprintf("sim-%03d", i+1) }

// Start starts the API server, installs the CRDs, creates the pool's policy and the
// Nodes, writes the kubeconfig, and runs the controller, the agents and the control
// socket until Stop. On error everything started is stopped.
func Start(ctx context.Context, cfg Config) (_ *Fleet, err error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Assets == "" {
		if cfg.Assets, err = FindAssets(); err != nil {
			return nil, err
		}
	} else if err := hasBinaries(cfg.Assets); err != nil {
		return nil, err
	}
	if err := prepareStateDir(ctx, cfg.StateDir); err != nil {
		return nil, err
	}
	f := &Fleet{cfg: cfg, byName: map[string]*simNode{}, started: time.Now()}
	defer func() {
		if err != nil {
			err = errors.Join(err, f.Stop())
		}
	}()
	if f.cfg.Log == nil {
		lf, err := os.OpenFile(filepath.Join(cfg.StateDir, LogFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("opening the fleet log in %s: %w", cfg.StateDir, err)
		}
		f.logFile = lf
		f.cfg.Log = slog.New(slog.NewTextHandler(lf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if err := f.startAPIServer(ctx); err != nil {
		return nil, err
	}
	if err := f.createPoolAndNodes(ctx); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f.cancel = cancel
	if err := f.startController(runCtx); err != nil {
		return nil, err
	}
	if err := f.startAgents(runCtx); err != nil {
		return nil, err
	}
	if err := f.serveControl(runCtx); err != nil {
		return nil, err
	}
	if err := os.WriteFile(f.Kubeconfig(), f.cp.Kubeconfig(), 0o600); err != nil {
		return nil, fmt.Errorf("writing the fleet's kubeconfig %s: %w", f.Kubeconfig(), err)
	}
	return f, nil
}

func (c *Config) check() error {
	var errs []error
	if c.Nodes < 1 || c.Nodes > MaxNodes {
		errs = append(errs, fmt.Errorf("nodes %d: want 1 to %d", c.Nodes, MaxNodes))
	}
	if c.Scenario == nil {
		errs = append(errs, errors.New("no scenario"))
	}
	if c.StateDir == "" {
		errs = append(errs, errors.New("no state folder"))
	}
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("interval %s: must be positive", c.Interval))
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if p := filepath.Join(c.StateDir, SocketFile); len(p) > maxSocketPath {
		errs = append(errs, fmt.Errorf("state folder %s: the socket path %s is longer than %d bytes", c.StateDir, p, maxSocketPath))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("simulated fleet: %w", err)
	}
	return nil
}

// Kubeconfig is the path of the kubeconfig file of the fleet's API server.
func (f *Fleet) Kubeconfig() string { return filepath.Join(f.cfg.StateDir, KubeconfigFile) }

// Socket is the path of the fleet's control socket.
func (f *Fleet) Socket() string { return filepath.Join(f.cfg.StateDir, SocketFile) }

// Host is the API server's URL.
func (f *Fleet) Host() string { return f.rest.Host }

// Client is a client of the fleet's API server (gpunode's kinds and the built-in ones).
func (f *Fleet) Client() client.Client { return f.client }

// Nodes are the fleet's node names, in order.
func (f *Fleet) Nodes() []string {
	out := make([]string, len(f.nodes))
	for i, n := range f.nodes {
		out[i] = n.name
	}
	return out
}

// Started is when Start began.
func (f *Fleet) Started() time.Time { return f.started }

// Inject injects fault into the named node's simulated GPUs now.
func (f *Fleet) Inject(node string, fault sim.Fault) error {
	n, ok := f.byName[node]
	if !ok {
		return fmt.Errorf("%w: %q (the fleet's nodes: %s to %s)", ErrUnknownNode, node, NodeName(0), NodeName(len(f.nodes)-1))
	}
	if err := n.backend.Inject(fault); err != nil {
		return fmt.Errorf("inject into node %s: %w", node, err)
	}
	f.cfg.Log.Info("fault injected", "node", node, "gpu", fault.GPU, "type", fault.Type, "xid", fault.XID)
	return nil
}

// Stop stops the agents, the controller, the control socket and the API server, in that
// order, and removes the kubeconfig and the socket. The nodes' journals, evidence and the
// log stay in the state folder. It returns what went wrong while running or stopping.
func (f *Fleet) Stop() error {
	f.stopOnce.Do(func() {
		if f.cancel != nil {
			f.cancel()
		}
		f.wg.Wait()
		errs := f.runErrs
		if f.cp != nil {
			if err := f.cp.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("stopping the API server: %w", err))
			}
		}
		if f.cpLog != nil {
			errs = append(errs, f.cpLog.Close())
		}
		for _, p := range []string{f.Kubeconfig(), f.Socket()} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing %s: %w", p, err))
			}
		}
		if f.logFile != nil {
			errs = append(errs, f.logFile.Close())
		}
		f.stopErr = errors.Join(errs...)
	})
	return f.stopErr
}

// run runs fn in the background until the fleet stops, recording its error.
func (f *Fleet) run(what string, fn func() error) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		if err := fn(); err != nil && !errors.Is(err, context.Canceled) {
			f.cfg.Log.Error("stopped with an error", "component", what, "err", err)
			f.mu.Lock()
			f.runErrs = append(f.runErrs, fmt.Errorf("%s: %w", what, err))
			f.mu.Unlock()
		}
	}()
}

// startAPIServer starts etcd and kube-apiserver from the assets folder as child
// processes (package controlplane; not envtest, which is test code), their output going
// to ControlPlaneLogFile, and installs gpunode's CRDs.
func (f *Fleet) startAPIServer(ctx context.Context) error {
	assets := f.cfg.Assets
	crds, err := CRDs()
	if err != nil {
		return err
	}
	s, err := acceptance.Scheme()
	if err != nil {
		return err
	}
	logPath := filepath.Join(f.cfg.StateDir, ControlPlaneLogFile)
	if f.cpLog, err = os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600); err != nil {
		return fmt.Errorf("opening the control plane's log %s: %w", logPath, err)
	}
	f.cp, err = controlplane.Start(ctx, controlplane.Config{Assets: assets, StartTimeout: 2 * time.Minute, Output: f.cpLog})
	if err != nil {
		return fmt.Errorf("starting kube-apiserver and etcd from %s (their output: %s): %w", assets, logPath, err)
	}
	cfg := f.cp.RESTConfig()
	if err := controlplane.InstallCRDs(ctx, cfg, crds, time.Minute); err != nil {
		return fmt.Errorf("on the API server %s: %w", cfg.Host, err)
	}
	cfg.QPS, cfg.Burst = 200, 400 // one process speaks for every node
	f.rest = cfg
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return fmt.Errorf("creating a client for %s: %w", cfg.Host, err)
	}
	f.client = c
	return nil
}

// createPoolAndNodes creates the pool's policy (every node, remediation's defaults) and
// one Node per simulated node, as a kubelet would register it.
func (f *Fleet) createPoolAndNodes(ctx context.Context) error {
	policy := &v1alpha1.GPUNodePolicy{}
	policy.Name = PolicyName
	if err := f.client.Create(ctx, policy); err != nil {
		return fmt.Errorf("creating the GPUNodePolicy %s: %w", PolicyName, err)
	}
	for i := range f.cfg.Nodes {
		name := NodeName(i)
		nd := &corev1.Node{}
		nd.Name = name
		nd.Labels = map[string]string{LabelFleet: "true", corev1.LabelHostname: name}
		if err := f.client.Create(ctx, nd); err != nil {
			return fmt.Errorf("creating the Node %s: %w", name, err)
		}
	}
	return nil
}
