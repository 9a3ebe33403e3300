// Package sim is the simulated GPU backend: a gpu.Backend built from a preset machine model
// (a100x8, h100x8, h200x8, b200x8, h200x1) or a YAML scenario file with per-GPU overrides and
// timed faults, plus runtime fault injection. docs/sim-scenarios.md describes the format.
//
// Every answer is a pure function of the scenario, the faults injected so far and the
// clock: a fault changes the snapshot, the kernel log and the performance factors from its
// time on.
package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/yamlfile"
)

// Backend is a simulated node's GPUs. It is safe for concurrent use.
type Backend struct {
	clock  func() time.Time
	start  time.Time
	driver gpu.Driver
	base   []gpu.Device
	// driverFile, when set, says whether the driver is loaded and its version (driverfile.go).
	driverFile string

	mu     sync.Mutex
	faults []Fault                  // the scenario's faults, then injected ones; kept sorted by At
	events hub                      // what Watch delivers (watch.go)
	procs  map[string][]gpu.Process // by GPU UUID (recover.go)
}

var _ gpu.Backend = (*Backend)(nil)

// Option configures Load and New.
type Option func(*options)

type options struct {
	clock      func() time.Time
	driverFile string
}

// WithClock sets the clock (default time.Now). The backend's start time is read from it once,
// by Load or New; fault times count from there.
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// Load builds a backend from a preset name or a scenario file path. A string with no path
// separator and no .yaml or .yml extension is a preset name.
func Load(presetOrFile string, opts ...Option) (*Backend, error) {
	if isPreset(presetOrFile) {
		s, err := PresetScenario(presetOrFile)
		if err != nil {
			return nil, err
		}
		return New(s, opts...)
	}
	data, err := yamlfile.ReadFile(presetOrFile)
	if err != nil {
		return nil, fmt.Errorf("read sim scenario %s: %w", presetOrFile, err)
	}
	s, err := Parse(presetOrFile, data)
	if err != nil {
		return nil, err
	}
	return New(s, opts...)
}

func isPreset(s string) bool {
	ext := strings.ToLower(filepath.Ext(s))
	return !strings.ContainsAny(s, `/\`) && !strings.ContainsRune(s, os.PathSeparator) && ext != ".yaml" && ext != ".yml"
}

func collect(opts []Option) options {
	o := options{clock: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.clock == nil {
		o.clock = time.Now
	}
	return o
}

// New builds a backend from a scenario (from Parse, PresetScenario, or built in code). It
// copies the scenario and validates its faults; errors wrap ErrInvalidScenario.
func New(s *Scenario, opts ...Option) (*Backend, error) {
	o := collect(opts)
	b := &Backend{clock: o.clock, driver: s.Driver, driverFile: o.driverFile}
	for _, d := range s.Devices {
		b.base = append(b.base, cloneDevice(d))
	}
	for i, f := range s.Faults {
		if p := checkFault(f, b.base); p != nil {
			return nil, fmt.Errorf("%w: %s: fault %d (%s): %s: %s", ErrInvalidScenario, s.Name, i, f.Type, p.field, p.msg)
		}
		b.faults = append(b.faults, cloneFault(f))
	}
	slices.SortStableFunc(b.faults, func(a, c Fault) int { return cmpDuration(a.At, c.At) })
	b.events.timed = b.faults // Inject copies on write: this slice never changes
	b.start = b.clock()
	return b, nil
}

func cmpDuration(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Name implements gpu.Backend.
func (b *Backend) Name() string { return "sim" }

// Close implements gpu.Backend; it does nothing.
func (b *Backend) Close() error { return nil }

// Snapshot implements gpu.Backend: the devices with every fault whose time has come applied.
func (b *Backend) Snapshot(ctx context.Context) (*gpu.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sim snapshot: %w", err)
	}
	driver, err := b.loadedDriver()
	if err != nil {
		return nil, err
	}
	now, st := b.now()
	return &gpu.Snapshot{Backend: "sim", Time: now, Driver: driver, Devices: st.devs}, nil
}

// KernelLog returns the kernel-log lines written so far (their time has come), oldest first.
func (b *Backend) KernelLog() []KernelLine {
	_, st := b.now()
	return st.lines
}

// PerfFactor returns how a GPU's bandwidth and compute are scaled now: 1 when healthy, the
// factor of its latest slow-bandwidth or slow-compute fault otherwise; 0, 0 for an index
// that does not exist.
func (b *Backend) PerfFactor(index int) (bandwidth, compute float64) {
	_, st := b.now()
	if index < 0 || index >= len(st.perf) {
		return 0, 0
	}
	return st.perf[index].bandwidth, st.perf[index].compute
}

// Inject applies a fault from now on (f.At is ignored) and hands it to every watcher at once
// (see Watch). Errors wrap ErrInvalidFault.
func (b *Backend) Inject(f Fault) error {
	if p := checkFault(f, b.base); p != nil {
		return fmt.Errorf("%w: %s: %s: %s", ErrInvalidFault, f.Type, p.field, p.msg)
	}
	f = cloneFault(f)
	b.mu.Lock()
	defer b.mu.Unlock()
	f.At = b.clock().Sub(b.start)
	// Keep the list sorted: the fault goes after every fault at or before its time.
	i, _ := slices.BinarySearchFunc(b.faults, f.At, func(e Fault, t time.Duration) int {
		if e.At <= t {
			return -1
		}
		return 1
	})
	// Copy on write: now() hands the old slice to readers outside the lock.
	faults := make([]Fault, 0, len(b.faults)+1)
	faults = append(append(append(faults, b.faults[:i]...), f), b.faults[i:]...)
	b.faults = faults
	b.events.inject(f)
	return nil
}

// now replays the faults as of the clock.
func (b *Backend) now() (time.Time, *state) {
	b.mu.Lock()
	now := b.clock()
	faults := b.faults // never modified in place
	b.mu.Unlock()
	return now, replay(b.base, faults, b.start, now.Sub(b.start))
}

// cloneFault copies the fault's slices and pointers, so the caller may reuse them.
func cloneFault(f Fault) Fault {
	f.Links = slices.Clone(f.Links)
	if f.GPUInstance != nil {
		v := *f.GPUInstance
		f.GPUInstance = &v
	}
	if f.ComputeInstance != nil {
		v := *f.ComputeInstance
		f.ComputeInstance = &v
	}
	return f
}
