// Package deviceplugin advertises the node's GPUs to the kubelet through the device-plugin
// API v1beta1 (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1), with live per-device health.
//
// The devices come from the GPU port's snapshot: whole GPUs, MIG devices (strategies none,
// single, mixed) and time-slicing replicas (<uuid>::<n>), one plugin and socket per
// resource name (see Resources). Their health comes from a HealthSource keyed by GPU (a
// MIG device or replica follows its GPU), and a change is pushed to the kubelet as soon
// as the source signals it. Run serves a plugin's unix socket in the kubelet's
// device-plugins folder, registers with the kubelet, and serves and registers again when
// the kubelet restarts; RunAll runs every plugin of a node.
package deviceplugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpunode/gpunode/internal/gpu"
)

// ResourceName is the whole-GPU extended resource.
const ResourceName = "nvidia.com/gpu"

// DefaultSocket is the nvidia.com/gpu plugin's socket name inside the device-plugins
// folder; other resources get gpunode-<name>.sock.
const DefaultSocket = "gpunode-gpu.sock"

// DefaultPollInterval is how often Run checks whether the kubelet restarted.
const DefaultPollInterval = time.Second

// HealthSource tells which GPUs are fit for workloads.
type HealthSource interface {
	// Health maps GPU UUID to healthy. A UUID the map lacks is healthy (nothing is known
	// against it).
	Health() map[string]bool
	// Changed receives a value whenever Health may have changed.
	Changed() <-chan struct{}
}

// Config configures the plugins of a node.
type Config struct {
	// Backend is the GPU port the devices are discovered through.
	Backend gpu.Backend
	// Health is the per-GPU health; required. MIG devices and replicas follow their GPU.
	Health HealthSource
	// Strategy is how Allocate hands devices to a container; Sharing.Strategy, else
	// StrategyEnvvar, when empty.
	Strategy Strategy
	// Sharing is the MIG strategy and time-slicing (the configuration file).
	Sharing Sharing
	// Dir is the kubelet's device-plugins folder (it holds kubelet.sock);
	// pluginapi.DevicePluginPath when empty.
	Dir string
	// PollInterval is how often the kubelet's socket is checked; DefaultPollInterval when 0.
	PollInterval time.Duration
	// Log receives the plugin's events; discarded when nil.
	Log *slog.Logger
}

// Plugin is the device plugin for one resource of a node. Its gRPC methods are safe for
// concurrent use.
type Plugin struct {
	pluginapi.UnimplementedDevicePluginServer

	cfg      Config
	resource Resource
	socket   string
	byID     map[string]Device

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every health change
}

// NewAll discovers the GPUs through cfg.Backend and returns one plugin per resource that
// the sharing configuration makes of them (see Resources), nvidia.com/gpu first.
func NewAll(ctx context.Context, cfg Config) ([]*Plugin, error) {
	if cfg.Backend == nil {
		return nil, errors.New("device plugin: no GPU backend configured")
	}
	if cfg.Health == nil {
		return nil, errors.New("device plugin: no health source configured")
	}
	cfg.Strategy = cmp.Or(cfg.Strategy, cfg.Sharing.Strategy, StrategyEnvvar)
	if !slices.Contains(Strategies(), cfg.Strategy) {
		return nil, fmt.Errorf("device plugin: unknown strategy %q (known: %v)", cfg.Strategy, Strategies())
	}
	if cfg.Dir == "" {
		cfg.Dir = pluginapi.DevicePluginPath
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	cfg.Log = cfg.Log.With("logger", "deviceplugin")
	snap, err := cfg.Backend.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("device plugin: discover GPUs through %s: %w", cfg.Backend.Name(), err)
	}
	for _, d := range snap.Devices {
		if d.UUID == "" || d.Err(gpu.FieldUUID) != nil {
			cfg.Log.Warn("device plugin: GPU without a UUID is not advertised", "index", d.Index)
		}
	}
	resources, err := Resources(snap.Devices, cfg.Sharing)
	if err != nil {
		return nil, err
	}
	out := make([]*Plugin, 0, len(resources))
	for _, r := range resources {
		p := &Plugin{cfg: cfg, resource: r, socket: socketName(r.Name), byID: map[string]Device{}, changed: make(chan struct{})}
		for _, d := range r.Devices {
			p.byID[d.ID] = d
		}
		out = append(out, p)
	}
	return out, nil
}

// ResourceName is the extended resource this plugin serves.
func (p *Plugin) ResourceName() string { return p.resource.Name }

// Devices are the devices this plugin advertises.
func (p *Plugin) Devices() []Device { return slices.Clone(p.resource.Devices) }

// GetDevicePluginOptions tells the kubelet that GetPreferredAllocation is available.
func (p *Plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return options(), nil
}

func options() *pluginapi.DevicePluginOptions {
	return &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true}
}

// ListAndWatch sends the devices, then the devices again each time a health changes,
// until the stream ends.
func (p *Plugin) ListAndWatch(_ *pluginapi.Empty, s grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	var last []*pluginapi.Device
	for {
		wake := p.wake() // before reading health, so no change is missed
		devs := p.list()
		if last == nil || !sameHealth(last, devs) {
			if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
				return fmt.Errorf("device plugin: send device list: %w", err)
			}
			last = devs
		}
		select {
		case <-s.Context().Done():
			return nil
		case <-wake:
		}
	}
}

// PreStartContainer does nothing; the plugin does not ask for it.
func (p *Plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// list is the devices with their current health, by index.
func (p *Plugin) list() []*pluginapi.Device {
	health := p.cfg.Health.Health()
	out := make([]*pluginapi.Device, 0, len(p.resource.Devices))
	for _, d := range p.resource.Devices {
		out = append(out, &pluginapi.Device{ID: d.ID, Health: healthString(health, d.GPU.UUID), Topology: topology(d.GPU)})
	}
	return out
}

func healthString(health map[string]bool, uuid string) string {
	if ok, known := health[uuid]; known && !ok {
		return pluginapi.Unhealthy
	}
	return pluginapi.Healthy
}

func topology(d gpu.Device) *pluginapi.TopologyInfo {
	if d.NUMANode < 0 {
		return nil
	}
	return &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(d.NUMANode)}}}
}

func sameHealth(a, b []*pluginapi.Device) bool {
	return slices.EqualFunc(a, b, func(x, y *pluginapi.Device) bool { return x.ID == y.ID && x.Health == y.Health })
}

// wake returns a channel that is closed at the next health change.
func (p *Plugin) wake() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// broadcast wakes every ListAndWatch stream.
func (p *Plugin) broadcast() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.changed)
	p.changed = make(chan struct{})
}

// relay turns the health source's signals into broadcasts until ctx ends.
func (p *Plugin) relay(ctx context.Context) {
	src := p.cfg.Health.Changed()
	for {
		select {
		case <-ctx.Done():
			return
		case <-src:
			p.broadcast()
		}
	}
}
