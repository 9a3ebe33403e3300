// Package agent is the node agent: the loop that keeps a node's GPUNode, its labels and
// its acceptance records in step with what the node's GPUs and host report.
//
// The agent owns, under the server-side-apply field manager gpunode-agent: the Node labels
// of GPU Feature Discovery and the platform labels (metadata.labels only), the GPUNode
// status fields it observes (acceleratorClass, gpuCount, health, inventory, versions,
// gpuHealth, lastAcceptance) and the GPUHealthy condition. It creates the GPUNode at first
// start and then holds the node (owner acceptance, reason not-accepted), and it creates
// AcceptanceRecords. It never writes the GPUNode spec after creating it, nor the phase or
// holds in the status: those are the controller's.
//
// The controller asks for acceptance by raising spec.acceptanceGeneration; the agent runs
// node-local acceptance when it is above status.lastAcceptance.generation, creates the
// AcceptanceRecord (name = the record ID, spec.acceptanceGeneration = the number answered)
// and then sets status.lastAcceptance. When the reason is a release from Maintenance
// (v1alpha1.AcceptanceReasonReleased) every GPU first counts as serviced, and the run's
// result is each serviced GPU's check: only a passing run makes it healthy again.
//
// Each GPU's entry in status.gpuHealth also lists the pods holding it (from the kubelet's
// pod-resources API, through Config.Pods) and the number of processes on it (when the
// backend is a gpu.ProcessLister), for the controller's drains and resets.
//
// Every API error is retried with capped exponential backoff; the latest facts are kept in
// memory and published once the API server answers, and a record that could not be created
// is created then (the run is not repeated).
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/buildinfo"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/labels"
	"github.com/gpunode/gpunode/internal/monitor"
	"github.com/gpunode/gpunode/internal/xid"
)

// Config wires an Agent to its node and its API server.
type Config struct {
	// NodeName is the Kubernetes Node (and GPUNode) name.
	NodeName string
	// Client talks to the API server; it should read from the server, not a cache.
	Client client.Client
	// Backend reads the GPUs; the agent's health monitor polls it too.
	Backend gpu.Backend
	// Host returns the reader of the node's host facts for the given GPUs.
	Host func(devs []gpu.Device) (*host.Reader, error)
	// HostOptions are passed to every host read.
	HostOptions host.Options
	// XIDs reads the kernel log since boot for acceptance; nil: not read (the kernel-log
	// check then reports it).
	XIDs func(ctx context.Context) ([]xid.Event, error)
	// Kernel is the health monitor's kernel-log source; nil: not followed.
	Kernel monitor.KernelSource
	// OnFinding is called with each of the health monitor's findings (the metrics' XID
	// counter); see monitor.Config.OnFinding.
	OnFinding func(f health.Finding, isNew bool)
	// BootID, when set, lets the health monitor see a node reboot without a restart of the
	// agent (simulated GPUs); see monitor.Config.BootID.
	BootID func() string
	// Mapping gives the accelerator class.
	Mapping labels.Mapping
	// Labels configures the GPU Feature Discovery labels: the device plugin's MIG strategy
	// and sharing (deviceplugin.Sharing.LabelConfig), so that nvidia.com/gpu.replicas and
	// the -SHARED product match what the plugin advertises. Zero: whole GPUs, not shared.
	Labels labels.Config
	// Pods tells which pods hold each GPU (the kubelet's pod-resources API); nil: not
	// read, and status.gpuHealth[].pods stays absent.
	Pods PodSource
	// Interval between two rounds of publishing (default 30 s); the monitor polls at the
	// same interval.
	Interval time.Duration
	// Resync republishes an unchanged status and labels after this long (default 10 × Interval).
	Resync time.Duration
	// Heartbeat is how often the heartbeat is written (default: Interval, but no more often
	// than every MinHeartbeat, 30 s; a value set here is taken as is).
	Heartbeat time.Duration
	// MinBackoff and MaxBackoff bound the wait after a failed round (defaults: 500 ms, 1 min).
	MinBackoff, MaxBackoff time.Duration
	// Clock (default time.Now).
	Clock func() time.Time
	// Log (default: discard).
	Log *slog.Logger
	// OnHealthChange is called (never blocking the caller for long) when a new finding may
	// have changed a GPU's health: the device plugin pushes Unhealthy to the kubelet.
	OnHealthChange func()
	// OnPolicy is called, every round, with the GPUNodePolicy that governs the node
	// (nodepolicy.BuiltIn when none selects it): the DRA plugin follows its spec.dra. It is
	// not called in a round whose policies cannot be listed.
	OnPolicy func(*v1alpha1.GPUNodePolicy)
	// GPUAPI is how this agent serves the node's GPUs to pods (v1alpha1.GPUAPIDevicePlugin or
	// GPUAPIDRA), reported as status.gpuAPI; "" when it serves neither.
	GPUAPI string
	// Tool identifies the build in the records (default buildinfo.Get()).
	Tool *buildinfo.Info
	// NoWatch turns off watching the GPUNode for the controller's requests and the
	// GPUNodePolicies for changes (a Client that can watch, client.WithWatch, is watched by
	// default); requests are then seen only at each Interval, and every round reads the
	// GPUNode and lists the policies.
	NoWatch bool
	// Steps carries out the controller's reset, reboot and power-cycle requests; nil:
	// every request is answered Refused.
	Steps Steps
	// Evidence writes the evidence bundle a capture-evidence request asks for; nil: refused.
	Evidence EvidenceWriter
	// Journal keeps the step in flight across restarts (a reboot); nil: not kept, and a
	// reboot's answer cannot be written after the boot.
	Journal Journal
	// Cleared keeps the XIDs recovery steps cleared across restarts (a FileCleared under
	// the state folder); nil: kept in memory only, and a restarted agent judges them again.
	Cleared ClearedStore
	// OnPause is called when the GPU Operator's pause label on the node changes: with the
	// label (key=value) when a nvidia.com/gpu.deploy.* label becomes paused-for-*, with ""
	// when none is left. The caller releases the GPUs (platform.Driver.Pause) and reopens
	// them; nil: the labels are only reported in status.stack.paused.
	OnPause func(label string)
	// Records keeps the record of each acceptance run on the node (a *record.Store in
	// <state-dir>/records), whose newest result the agent's /metrics serves; nil: not kept.
	Records RecordStore
}

// Agent runs the node agent's loop. Make one with New and call Run once.
type Agent struct {
	cfg  Config
	mon  *monitor.Monitor
	wake chan struct{}
	// Loop state: kept across failed rounds, so that nothing observed is lost.
	ensured   bool
	last      *v1alpha1.AcceptanceSummary // what status.lastAcceptance is (or will be)
	pending   *v1alpha1.AcceptanceRecord  // a run whose record is not created yet
	condition *metav1.Condition           // the GPUHealthy condition as published
	answer    *v1alpha1.RemediationAnswer // what status.remediationAnswer is (or will be)
	cleared   clearedSet                  // XIDs since boot a recovery covered (cleared.go)
	journaled int64                       // the request whose answer the journal keeps
	published published
	parents   parents  // MIG device -> GPU, for the pod source
	live      liveness // what the heartbeat knows of the loop (heartbeat.go)
	watched   watched  // what the watches keep between rounds (watch.go)
	// policyLabels are the node labels the governing policy was last chosen by (policy.go).
	policyLabels string
	paused       string // the GPU Operator label that pauses the node's GPU clients (stack.go)
	stack        *v1alpha1.StackStatus
}

// published remembers what was last written successfully, to skip unchanged writes.
type published struct {
	labels, status, nodeConditions string
	at                             time.Time
}

// New checks cfg and builds the agent and its health monitor.
func New(cfg Config) (*Agent, error) {
	switch {
	case cfg.NodeName == "":
		return nil, errors.New("agent: no node name")
	case cfg.Client == nil:
		return nil, errors.New("agent: no API client")
	case cfg.Backend == nil:
		return nil, errors.New("agent: no GPU backend")
	case cfg.Host == nil:
		return nil, errors.New("agent: no host reader")
	}
	if err := cfg.Labels.Validate(); err != nil {
		return nil, fmt.Errorf("agent: label configuration: %w", err)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Resync <= 0 {
		cfg.Resync = 10 * cfg.Interval
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = max(cfg.Interval, MinHeartbeat)
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 500 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(time.Minute, cfg.MinBackoff)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Tool == nil {
		info := buildinfo.Get()
		cfg.Tool = &info
	}
	a := &Agent{cfg: cfg, wake: make(chan struct{}, 1), live: liveness{first: make(chan struct{}, 1)}}
	changed := func() {
		a.poke()
		if cfg.OnHealthChange != nil {
			cfg.OnHealthChange()
		}
	}
	m, err := monitor.New(monitor.Config{Backend: cfg.Backend, Interval: cfg.Interval, Kernel: cfg.Kernel,
		Clock: cfg.Clock, Log: cfg.Log, BootID: cfg.BootID, OnFinding: func(f health.Finding, isNew bool) {
			if cfg.OnFinding != nil {
				cfg.OnFinding(f, isNew)
			}
			if isNew {
				a.poke()
			}
			if cfg.OnHealthChange != nil {
				cfg.OnHealthChange()
			}
		}, OnRecovered: func([]string, health.RecoveryKind) { changed() }, Cleared: a.clearedKernelLine})
	if err != nil {
		return nil, err
	}
	a.mon = m
	return a, nil
}

// Health is every GPU's health as the agent's monitor sees it.
func (a *Agent) Health() []monitor.GPUHealth { return a.mon.Health() }

// Findings are the health monitor's deduplicated findings.
func (a *Agent) Findings() []health.Finding { return a.mon.Findings() }

// poke asks for a round now (a new finding changed a GPU's health).
func (a *Agent) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Run runs the health monitor, the publishing loop and the heartbeat (heartbeat.go) until
// ctx ends. It returns nil then: API errors are retried, never returned.
func (a *Agent) Run(ctx context.Context) error {
	a.loadCleared(ctx) // before the monitor reads the kernel log from boot
	monDone := make(chan error, 1)
	go func() { monDone <- a.mon.Run(ctx) }()
	beatDone := make(chan struct{})
	go func() { defer close(beatDone); a.heartbeat(ctx) }()
	if w, canWatch := a.cfg.Client.(client.WithWatch); canWatch && !a.cfg.NoWatch {
		go a.watchSpec(ctx, w)
		go a.watchPolicies(ctx, w)

		go a.watchNode(ctx, w)
	}
	backoff := time.Duration(0)
	for {
		if err := a.round(ctx); err != nil {
			if ctx.Err() != nil {
				break
			}
			backoff = nextBackoff(backoff, a.cfg.MinBackoff, a.cfg.MaxBackoff)
			a.cfg.Log.Warn("publishing failed; retrying", "node", a.cfg.NodeName, "in", backoff, "err", err)
			if !sleep(ctx, backoff, nil) {
				break
			}
			continue
		}
		backoff = 0
		if !sleep(ctx, a.cfg.Interval, a.wake) {
			break
		}
	}
	<-beatDone
	return <-monDone
}

// nextBackoff doubles the previous wait, from lo up to hi.
func nextBackoff(prev, lo, hi time.Duration) time.Duration {
	if prev < lo {
		return lo
	}
	return min(2*prev, hi)
}

// sleep waits d, or until wake fires; false when ctx ended.
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return true
}
