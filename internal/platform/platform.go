// Package platform chooses the node's platform once, from the flags: the GPU backend (NVML
// or simulated GPUs), the host root, the kernel-log source, the telemetry source, the
// remediation steps and the evidence kernel source, and (simulated GPUs only) the
// fault-injection target. Commands take a Platform and ask it; they never look at which
// backend they hold. go-nvml stays in internal/gpu/nvml: this package only picks.
package platform

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/nvml"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/host/rootfs"
)

// DefaultKernelLog is the kernel-log option that means "the platform's own": the simulated
// node's log with simulated GPUs, the live /dev/kmsg otherwise.
const DefaultKernelLog = "/dev/kmsg"

// NoKernelLog turns the kernel log off.
const NoKernelLog = "none"

// InvalidError is an option that is bad input (a scenario that does not parse or cannot be
// read, a negative elapsed time, a kernel log that is not there): the command exits 2.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

func invalid(format string, args ...any) error {
	return &InvalidError{Err: fmt.Errorf(format, args...)}
}

// Options are the flags that choose the platform.
type Options struct {
	// Sim is a preset or a scenario file: simulated GPUs. Empty: NVML.
	Sim string
	// SimElapsed reads the scenario as if this long had passed since the node started.
	SimElapsed time.Duration
	// HostRoot is where the host's files are ("" is "/").
	HostRoot string
	// KernelLog is DefaultKernelLog, NoKernelLog ("" too), or a path (a record device or a
	// saved log).
	KernelLog string
	// TrustUserKmsg also takes /dev/kmsg records written from user space (tests only).
	TrustUserKmsg bool
	// SimDriverFile (simulated GPUs only) is the host path, read under HostRoot, of the
	// simulated driver's version file: the driver is loaded while it exists, at the version
	// it holds (sim.WithDriverFile). Empty: always loaded, at the scenario's version.
	SimDriverFile string
	// WaitForDriver makes the backend a *Driver: Open does not fail without a driver, the
	// driver is waited for with backoff (RunDriver) and can be paused (the agent).
	WaitForDriver bool
	// Log receives the driver's waits and releases (default: discard).
	Log *slog.Logger
}

// Driver backoff between failed opens of a backend that waits for its driver.
const (
	DriverMinBackoff = time.Second
	DriverMaxBackoff = 30 * time.Second
)

// Platform is the chosen platform of one process. Close it when done.
type Platform struct {
	// Backend reads the GPUs.
	Backend gpu.Backend
	sim     *sim.Backend  // nil on NVML
	nvml    *nvml.Backend // nil on simulated GPUs, and when waiting for the driver
	driver  *Driver       // nil unless Options.WaitForDriver
	o       Options
}

// Open opens the GPU backend the options name. A bad or unreadable scenario wraps
// an *InvalidError; a missing driver is a plain error.
func Open(o Options) (*Platform, error) {
	if o.Sim == "" && o.SimElapsed != 0 {
		return nil, invalid("--sim-elapsed needs --sim")
	}
	if o.Sim == "" && o.SimDriverFile != "" {
		return nil, invalid("--sim-driver-version-file needs --sim")
	}
	if o.Sim == "" && o.WaitForDriver {
		d := NewDriver("nvml", func() (gpu.Backend, error) { return nvml.New() }, func(b gpu.Backend) error { return b.Close() },
			DriverMinBackoff, DriverMaxBackoff, o.Log)
		return &Platform{Backend: d, driver: d, o: o}, nil
	}
	if o.Sim == "" {
		b, err := nvml.New()
		if err != nil {
			return nil, err
		}
		return &Platform{Backend: b, nvml: b, o: o}, nil
	}
	if o.SimElapsed < 0 {
		return nil, invalid("--sim-elapsed %s: must not be negative", o.SimElapsed)
	}
	opts := []sim.Option{sim.WithClock(startedAgo(o.SimElapsed))}
	if o.SimDriverFile != "" {
		opts = append(opts, sim.WithDriverFile(filepath.Join(hostRootOf(o), o.SimDriverFile)))
	}
	b, err := sim.Load(o.Sim, opts...)
	if err != nil {
		// A scenario file that cannot be read is bad input too: carrying on without GPU
		// facts would read the real host and kernel log into a simulated run.
		if errors.Is(err, sim.ErrInvalidScenario) {
			return nil, &InvalidError{Err: err}
		}
		return nil, invalid("simulated GPUs: %w", err)
	}
	if o.WaitForDriver {
		d := NewDriver("sim", func() (gpu.Backend, error) {
			if _, err := b.Snapshot(context.Background()); err != nil {
				return nil, err
			}
			return b, nil
		}, func(gpu.Backend) error { return nil }, DriverMinBackoff, DriverMaxBackoff, o.Log)
		return &Platform{Backend: d, sim: b, driver: d, o: o}, nil
	}
	return &Platform{Backend: b, sim: b, o: o}, nil
}

// Driver is the backend that waits for its driver (Options.WaitForDriver); nil otherwise.
func (p *Platform) Driver() *Driver { return p.driver }

// RunDriver opens the driver and keeps it open (or released while paused) until ctx
// ends; it returns at once unless the platform waits for its driver.
func (p *Platform) RunDriver(ctx context.Context) {
	if p.driver != nil {
		p.driver.Run(ctx)
	}
}

// Close releases the GPU backend. It is safe to call more than once.
func (p *Platform) Close() error { return p.Backend.Close() }

// Simulated reports whether the GPUs are simulated.
func (p *Platform) Simulated() bool { return p.sim != nil }

// Sim is the simulated node for the tools that act on it (fault injection, simulated
// measurements); nil on real GPUs.
func (p *Platform) Sim() *sim.Backend { return p.sim }

// HostRoot is the host's root folder ("/" unless told otherwise).
func (p *Platform) HostRoot() string { return hostRootOf(p.o) }

func hostRootOf(o Options) string {
	if o.HostRoot == "" {
		return "/"
	}
	return o.HostRoot
}

// Root is the host's files.
func (p *Platform) Root() fs.FS { return rootfs.Dir(p.HostRoot()) }

// BootID reads the node's boot ID for a health monitor that must see a reboot without a
// restart: the simulated node's (a simulated reboot keeps the process); nil on a real node,
// where a reboot restarts the process.
func (p *Platform) BootID() func() string {
	if p.sim == nil {
		return nil
	}
	return p.sim.BootID
}

// Telemetry is the scrape source of the metrics exporter and what keeps it fresh: on NVML
// the scrape reader whose energy counters (4 ms a GPU) are refreshed in the background by
// run; on simulated GPUs the backend itself (run returns at once).
func (p *Platform) Telemetry() (src gpu.TelemetrySource, run func(context.Context), err error) {
	if p.nvml != nil {
		st := nvml.NewScrapeTelemetry(p.nvml, nvml.DefaultEnergyRefresh)
		return st, st.Run, nil
	}
	if p.driver != nil && p.sim == nil {
		return p.driver, func(ctx context.Context) {
			p.driver.runTelemetry(ctx, func(b gpu.Backend) (gpu.TelemetrySource, func(context.Context)) {
				nb, isNVML := b.(*nvml.Backend)
				if !isNVML {
					ts, _ := b.(gpu.TelemetrySource)
					return ts, func(context.Context) {}
				}
				st := nvml.NewScrapeTelemetry(nb, nvml.DefaultEnergyRefresh)
				return st, st.Run
			})
		}, nil
	}
	if p.driver != nil {
		return p.driver, func(context.Context) {}, nil
	}
	tel, ok := p.Backend.(gpu.TelemetrySource)
	if !ok {
		return nil, nil, fmt.Errorf("the %s GPU backend has no telemetry", p.Backend.Name())
	}
	return tel, func(context.Context) {}, nil
}

// startedAgo is a clock whose first reading (the simulated node's start) lies d in the past.
func startedAgo(d time.Duration) func() time.Time {
	var once sync.Once
	return func() time.Time {
		now := time.Now()
		first := false
		once.Do(func() { first = true })
		if first {
			return now.Add(-d)
		}
		return now
	}
}
