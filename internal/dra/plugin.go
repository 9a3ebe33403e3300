package dra

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpunode/gpunode/internal/cdispec"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/monitor"
)

// DefaultResync is how often the slice is recomputed without a health change.
const DefaultResync = 10 * time.Second

// Config is a plugin's wiring.
type Config struct {
	// NodeName is the node, and the name of the pool its devices are published in.
	NodeName string
	// Client reads claims and writes the node's ResourceSlices.
	Client  kubernetes.Interface
	Backend gpu.Backend
	// Health reads the engine's per-GPU states (the agent's health monitor).
	Health func() []monitor.GPUHealth
	// Class is a GPU's accelerator class (nil: not published).
	Class func(*gpu.Device) string
	// Root is the host root the node's CDI spec is discovered under; Simulated GPUs
	// discover nothing.
	Root      fs.FS
	Simulated bool
	// PCIeRoot finds a bus ID's PCIe root complex (nil: not published).
	PCIeRoot func(busID string) (string, bool)
	// PluginDir (PluginDir by default) holds the DRA socket and the checkpoint;
	// RegistryDir (RegistryDir by default) the registration socket; CDIDir
	// (cdispec.DefaultDir by default) the claims' CDI specs.
	PluginDir, RegistryDir, CDIDir string
	// PodUID, when set, runs the plugin for rolling updates (two pods of the DaemonSet
	// at once over one PluginDir).
	PodUID string
	// Resync (DefaultResync when zero) recomputes the slice without a health change.
	Resync time.Duration
	// LayoutPoll (DefaultLayoutPoll when zero) is how often the MIG layout is read, when
	// the backend can read it alone.
	LayoutPoll time.Duration
	Log        *slog.Logger
}

// Plugin is the running DRA plugin.
type Plugin struct {
	cfg     Config
	prep    *Preparer
	specs   *cdispec.Source
	changed chan struct{}

	// evict taints lost GPUs and those needing a reboot or service NoExecute
	// (SetUnhealthyEffect).
	evict atomic.Bool

	mu   sync.Mutex
	snap *gpu.Snapshot
	inv  Inventory
	gen  chan struct{} // closed and replaced when inv changes
	fail func(error)   // stops Run on a fatal error of the helper
}

// New checks cfg and builds the plugin; Run starts it.
func New(cfg Config) (*Plugin, error) {
	if cfg.NodeName == "" || cfg.Client == nil || cfg.Backend == nil || cfg.Health == nil {
		return nil, errors.New("dra plugin: node name, client, backend and health are required")
	}
	if cfg.PluginDir == "" {
		cfg.PluginDir = PluginDir
	}
	if cfg.RegistryDir == "" {
		cfg.RegistryDir = RegistryDir
	}
	if cfg.CDIDir == "" {
		cfg.CDIDir = cdispec.DefaultDir
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.LayoutPoll <= 0 {
		cfg.LayoutPoll = DefaultLayoutPoll
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	p := &Plugin{cfg: cfg, specs: &cdispec.Source{Root: cfg.Root, Simulated: cfg.Simulated},
		changed: make(chan struct{}, 1), gen: make(chan struct{})}
	p.prep = &Preparer{Dir: cfg.PluginDir, CDIDir: cfg.CDIDir, Pool: cfg.NodeName, Current: p.current, Log: cfg.Log}
	return p, nil
}

// Notify says a GPU's health may have changed: the slice and the health stream follow
// at once. It never blocks.
func (p *Plugin) Notify() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// SetUnhealthyEffect sets the effect of the device taint of a GPU that is lost or needs the
// node rebooted or a person's service: NoExecute (its pods are evicted), or else NoSchedule
// (the default), as the governing GPUNodePolicy's spec.dra.unhealthyEffect says. A change
// recomputes the slice at once (and republishes it when a device is tainted). It never
// blocks.
func (p *Plugin) SetUnhealthyEffect(effect resourceapi.DeviceTaintEffect) {
	evict := effect == resourceapi.DeviceTaintEffectNoExecute
	if p.evict.Swap(evict) != evict {
		p.cfg.Log.Info("dra: the taint effect of lost GPUs and those needing a reboot or service changed", "evict", evict)
		p.Notify()
	}
}

// Preparer is the plugin's claim preparation (for tests and the real-GPU check).
func (p *Plugin) Preparer() *Preparer { return p.prep }

// Inventory is the devices published last.
func (p *Plugin) Inventory() Inventory {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inv
}

// DeviceUUID is the UUID of a published device (a GPU's, or a MIG device's), for the
// pod-resources attribution of DRA claims.
func (p *Plugin) DeviceUUID(device string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.inv.Entries[device]
	return e.UUID, ok
}

// Run registers with the kubelet, serves the DRA and health APIs and publishes the node's
// ResourceSlice until ctx ends. It returns an error when the plugin cannot start or the
// helper reports a fatal error.
func (p *Plugin) Run(ctx context.Context) error {
	if err := os.MkdirAll(p.cfg.PluginDir, 0o750); err != nil {
		return fmt.Errorf("dra plugin: %w", err)
	}
	if err := p.prep.Clean(); err != nil {
		p.cfg.Log.Warn("dra: stale claim specs not removed", "err", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p.mu.Lock()
	p.fail = cancel
	p.mu.Unlock()
	layouts, base := p.layoutSource(ctx)
	if _, err := p.refresh(ctx); err != nil {
		return err
	}
	if layouts != nil {
		done := make(chan struct{})
		go func(ctx context.Context) { defer close(done); p.followLayout(ctx, layouts, base) }(ctx)
		defer func() { cancel(nil); <-done }()
	}
	ctx = klog.NewContext(ctx, logr.FromSlogHandler(p.cfg.Log.Handler()).WithName("dra"))
	opts := []kubeletplugin.Option{
		kubeletplugin.DriverName(DriverName),
		kubeletplugin.KubeClient(p.cfg.Client),
		kubeletplugin.NodeName(p.cfg.NodeName),
		kubeletplugin.PluginDataDirectoryPath(p.cfg.PluginDir),
		kubeletplugin.RegistrarDirectoryPath(p.cfg.RegistryDir),
	}
	if p.cfg.PodUID != "" {
		opts = append(opts, kubeletplugin.RollingUpdate(types.UID(p.cfg.PodUID)))
	}
	helper, err := kubeletplugin.Start(ctx, p, opts...)
	if err != nil {
		return fmt.Errorf("dra plugin: start: %w", err)
	}
	defer helper.Stop()
	if err := helper.PublishResources(ctx, p.resources()); err != nil {
		if ctx.Err() != nil { // stopped while the slice controller started
			return nil
		}
		return fmt.Errorf("dra plugin: publish: %w", err)
	}
	p.cfg.Log.Info("dra: plugin started", "driver", DriverName, "devices", len(p.Inventory().Devices), "dir", p.cfg.PluginDir)
	tick := time.NewTicker(p.cfg.Resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		case <-p.changed:
		case <-tick.C:
		}
		changed, err := p.refresh(ctx)
		if err != nil {
			p.cfg.Log.Warn("dra: the GPUs could not be read; the slice is unchanged", "err", err)
			continue
		}
		if changed {
			if err := helper.PublishResources(ctx, p.resources()); err != nil {
				return fmt.Errorf("dra plugin: publish: %w", err)
			}
			p.cfg.Log.Info("dra: slice republished", "devices", len(p.Inventory().Devices))
		}
	}
}

// refresh reads the GPUs and their health and reports whether the devices changed.
func (p *Plugin) refresh(ctx context.Context) (bool, error) {
	snap, err := p.cfg.Backend.Snapshot(ctx)
	if err != nil {
		return false, fmt.Errorf("dra plugin: read the GPUs: %w", err)
	}
	states := map[string]health.State{}
	for _, g := range p.cfg.Health() {
		states[g.UUID] = g.State
	}
	inv := Devices(Facts{Snapshot: snap, Health: states, Class: p.cfg.Class, PCIeRoot: p.cfg.PCIeRoot, Evict: p.evict.Load()})
	p.mu.Lock()
	defer p.mu.Unlock()
	p.snap = snap
	if p.inv.Entries != nil && resourceslice.DevicesDeepEqual(p.inv.Devices, inv.Devices) {
		return false, nil
	}
	p.inv = inv
	close(p.gen)
	p.gen = make(chan struct{})
	return true, nil
}

func (p *Plugin) resources() resourceslice.DriverResources {
	inv := p.Inventory()
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		p.cfg.NodeName: {Slices: []resourceslice.Slice{{Devices: inv.Devices}}}}}
}

// current is the inventory and node CDI spec Prepare works against.
func (p *Plugin) current(ctx context.Context) (Inventory, *specs.Spec, error) {
	p.mu.Lock()
	snap, inv := p.snap, p.inv
	p.mu.Unlock()
	if snap == nil {
		if _, err := p.refresh(ctx); err != nil {
			return Inventory{}, nil, err
		}
		return p.current(ctx)
	}
	s, _, err := p.specs.Spec(snap)
	if err != nil {
		return inv, nil, fmt.Errorf("the node's CDI spec: %w", err)
	}
	return inv, s, nil
}

// PrepareResourceClaims implements kubeletplugin.DRAPlugin.
func (p *Plugin) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	res, err := p.prep.Prepare(ctx, claims)
	if err != nil {
		return nil, err
	}
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(res))
	for uid, r := range res {
		pr := kubeletplugin.PrepareResult{Err: r.Err}
		for _, d := range r.Devices {
			pr.Devices = append(pr.Devices, kubeletplugin.Device{Requests: d.Requests, PoolName: d.Pool,
				DeviceName: d.Device, CDIDeviceIDs: d.CDIDevices})
		}
		if r.Err != nil {
			p.cfg.Log.Warn("dra: claim not prepared", "claim", uid, "err", r.Err)
		}
		out[uid] = pr
	}
	return out, nil
}

// UnprepareResourceClaims implements kubeletplugin.DRAPlugin.
func (p *Plugin) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	refs := make([]ClaimRef, 0, len(claims))
	for _, c := range claims {
		refs = append(refs, ClaimRef{UID: c.UID, Namespace: c.Namespace, Name: c.Name})
	}
	return p.prep.Unprepare(ctx, refs)
}

// HandleError implements kubeletplugin.DRAPlugin: a recoverable error (a slice the API
// server refused, a dropped field) is logged; another stops Run.
func (p *Plugin) HandleError(_ context.Context, err error, msg string) {
	if errors.Is(err, kubeletplugin.ErrRecoverable) {
		p.cfg.Log.Warn("dra: background error", "what", msg, "err", err)
		return
	}
	p.cfg.Log.Error("dra: fatal error", "what", msg, "err", err)
	p.mu.Lock()
	fail := p.fail
	p.mu.Unlock()
	if fail != nil {
		fail(fmt.Errorf("dra plugin: %s: %w", msg, err))
	}
}
