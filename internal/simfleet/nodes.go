package simfleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/buildinfo"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
	"github.com/gpunode/gpunode/internal/controller/remediation"
	"github.com/gpunode/gpunode/internal/evidence"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/simhost"
	"github.com/gpunode/gpunode/internal/monitor"
	"github.com/gpunode/gpunode/internal/recovery"
	"github.com/gpunode/gpunode/internal/xid"
)

// simNode is one simulated node: its GPUs and its agent.
type simNode struct {
	name    string
	backend *sim.Backend
	agent   *agent.Agent
}

// startController runs the cluster controller as `gpunode controller` does, in process:
// the acceptance and remediation reconcilers, without leader election, metrics or probes.
func (f *Fleet) startController(ctx context.Context) error {
	s, err := acceptance.Scheme()
	if err != nil {
		return err
	}
	logger := logr.FromSlogHandler(f.cfg.Log.Handler())
	// controller-runtime's packages log through its global logger too; the fleet is the
	// process's only controller.
	ctrl.SetLogger(logger)
	mgr, err := ctrl.NewManager(f.rest, ctrl.Options{
		Scheme: s, Client: remediation.ClientOptions(), Logger: logger,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		// Several fleets may run in one process (tests); each has its own manager.
		Controller:              config.Controller{SkipNameValidation: ptr.To(true)},
		GracefulShutdownTimeout: ptr.To(10 * time.Second),
	})
	if err != nil {
		return fmt.Errorf("creating the controller manager for %s: %w", f.rest.Host, err)
	}
	ar := &acceptance.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(acceptance.Name), Clock: clock.RealClock{}}
	if err := ar.SetupWithManager(mgr); err != nil {
		return err
	}
	rr := &remediation.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(remediation.Name), Clock: clock.RealClock{}}
	if err := rr.SetupWithManager(mgr); err != nil {
		return err
	}
	f.run("controller", func() error { return mgr.Start(ctx) })
	return nil
}

// startAgents builds every node's simulated GPUs and agent, with the simulated recovery
// steps, a journal and an evidence store under the node's folder, and runs them.
func (f *Fleet) startAgents(ctx context.Context) error {
	version := buildinfo.Get().Version
	for i := range f.cfg.Nodes {
		name := NodeName(i)
		dir := filepath.Join(f.cfg.StateDir, nodesDir, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating the state folder of node %s: %w", name, err)
		}
		sc := *f.cfg.Scenario
		sc.Devices = append([]gpu.Device(nil), sc.Devices...)
		sc.Faults = append([]sim.Fault(nil), sc.Faults...)
		sc.Reseed(name)
		b, err := sim.New(&sc)
		if err != nil {
			return fmt.Errorf("simulated GPUs of node %s: %w", name, err)
		}
		n := &simNode{name: name, backend: b}
		log := f.cfg.Log.With("node", name)
		col := evidence.Collector{Node: evidence.NodeFacts{Node: name, Agent: version}, Backend: b,
			Kernel: simKernel{b}, Findings: n.findings, Health: n.health}
		a, err := agent.New(agent.Config{
			NodeName: name, Client: f.client, Backend: b,
			Host:       func(devs []gpu.Device) (*host.Reader, error) { return simhost.Reader(devs, nil) },
			XIDs:       func(context.Context) ([]xid.Event, error) { return kernelXIDs(b), nil },
			Kernel:     monitor.SimKernel(b, 0),
			Interval:   f.cfg.Interval,
			MinBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second,
			Log:      log,
			Steps:    recovery.Sim{Backend: b},
			Journal:  agent.FileJournal{Path: filepath.Join(dir, "remediation-step.json")},
			Cleared:  agent.FileCleared{Path: filepath.Join(dir, "cleared-xids.json")},
			Evidence: agent.EvidenceTo(col, &evidence.Store{Dir: filepath.Join(dir, "evidence")}),
		})
		if err != nil {
			return fmt.Errorf("agent of node %s: %w", name, err)
		}
		n.agent = a
		f.nodes = append(f.nodes, n)
		f.byName[name] = n
		f.run("agent "+name, func() error { return a.Run(ctx) })
	}
	return nil
}

func (n *simNode) findings() []health.Finding { return n.agent.Findings() }

func (n *simNode) health() *evidence.HealthState { return n.agent.EvidenceHealth() }

// kernelXIDs are the XID reports in the simulated node's kernel log since its boot.
func kernelXIDs(b *sim.Backend) []xid.Event {
	var sc xid.Scanner
	var out []xid.Event
	for _, l := range b.KernelLog() {
		if ev, ok := sc.Line(l.Text); ok {
			out = append(out, ev)
		}
	}
	sc.Devices().Attribute(out)
	return out
}

// simKernel is a simulated node's kernel log as an evidence source.
type simKernel struct{ b *sim.Backend }

func (s simKernel) Records(_ context.Context, w evidence.Window) ([]evidence.KernelRecord, error) {
	var out []evidence.KernelRecord
	for _, l := range s.b.KernelLog() {
		if !l.Time.Before(w.From()) {
			out = append(out, evidence.KernelRecord{Time: l.Time, Level: -1, Text: l.Text})
		}
	}
	return out, nil
}
