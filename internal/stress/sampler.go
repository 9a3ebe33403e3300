package stress

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// ClockSample is one reading of one GPU's SM clock and clock-event reasons.
type ClockSample struct {
	Time       time.Time
	GPU        int    // the GPU port's index
	SMClockMHz uint32 // 0 when it could not be read
	Events     []gpu.ClockEvent
}

// ClockSampler reads the clocks of every GPU once. Tests inject one; the
// command uses BackendSampler.
type ClockSampler interface {
	SampleClocks(ctx context.Context) ([]ClockSample, error)
}

// BackendSampler samples through the GPU port: the SM clock from Telemetry
// (when the backend is a gpu.TelemetrySource) and the clock-event reasons from
// Snapshot.
type BackendSampler struct{ Backend gpu.Backend }

// SampleClocks implements ClockSampler. A GPU whose clocks or reasons cannot
// be read gets a zero clock or no reasons; only a backend that cannot answer
// at all is an error.
func (b BackendSampler) SampleClocks(ctx context.Context) ([]ClockSample, error) {
	snap, err := b.Backend.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("clock events: %w", err)
	}
	clocks := map[int]uint32{}
	if ts, ok := b.Backend.(gpu.TelemetrySource); ok {
		t, err := ts.Telemetry(ctx)
		if err != nil {
			return nil, fmt.Errorf("SM clocks: %w", err)
		}
		for _, d := range t.Devices {
			if _, failed := d.Errors[gpu.FieldClocks]; !failed {
				clocks[d.Index] = d.SMClockMHz
			}
		}
	}
	out := make([]ClockSample, 0, len(snap.Devices))
	for _, d := range snap.Devices {
		s := ClockSample{Time: snap.Time, GPU: d.Index, SMClockMHz: clocks[d.Index]}
		if d.Err(gpu.FieldClockEvents) == nil {
			s.Events = slices.Clone(d.ClockEvents)
		}
		out = append(out, s)
	}
	return out, nil
}

// ClockSummary is what the sampler saw of one GPU during one test. Min, avg
// and max describe the GPU under load: samples taken while the driver reported
// it idle (between launches, before the first) are left out of them unless
// every sample was idle.
type ClockSummary struct {
	Samples       int    `json:"samples"`
	IdleSamples   int    `json:"idleSamples,omitempty"`
	MinSMClockMHz uint32 `json:"minSmClockMHz"`
	AvgSMClockMHz uint32 `json:"avgSmClockMHz"`
	MaxSMClockMHz uint32 `json:"maxSmClockMHz"`
	// Events are every clock-event reason seen, sorted; Throttle the ones that
	// are not benign (gpu.ClockEvent.Benign).
	Events   []gpu.ClockEvent `json:"events,omitempty"`
	Throttle []gpu.ClockEvent `json:"throttle,omitempty"`
	// Error says why there are no samples.
	Error string `json:"error,omitempty"`
}

// summarizeClocks summarises the samples of one GPU: clocks of 0 (unread) and
// idle samples (unless all are idle) are left out of min, average and max.
func summarizeClocks(samples []ClockSample) ClockSummary {
	var s ClockSummary
	seen := map[gpu.ClockEvent]bool{}
	var busy []ClockSample
	for _, c := range samples {
		s.Samples++
		for _, e := range c.Events {
			seen[e] = true
		}
		if slices.Contains(c.Events, gpu.ClockEventIdle) {
			s.IdleSamples++
			continue
		}
		busy = append(busy, c)
	}
	if len(busy) == 0 {
		busy = samples
	}
	var sum, n uint64
	for _, c := range busy {
		if c.SMClockMHz == 0 {
			continue
		}
		if n == 0 || c.SMClockMHz < s.MinSMClockMHz {
			s.MinSMClockMHz = c.SMClockMHz
		}
		s.MaxSMClockMHz = max(s.MaxSMClockMHz, c.SMClockMHz)
		sum += uint64(c.SMClockMHz)
		n++
	}
	if n > 0 {
		s.AvgSMClockMHz = uint32((sum + n/2) / n)
	}
	for e := range seen {
		s.Events = append(s.Events, e)
		if !e.Benign() {
			s.Throttle = append(s.Throttle, e)
		}
	}
	slices.Sort(s.Events)
	slices.Sort(s.Throttle)
	return s
}

// clockMonitor samples every interval from start until stop.
type clockMonitor struct {
	none    bool // no sampler
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples []ClockSample
	lastErr error
}

// startClocks samples at once, then every interval, and once more at stop.
// A nil sampler gives a monitor with no samples.
func startClocks(ctx context.Context, s ClockSampler, interval time.Duration) *clockMonitor {
	m := &clockMonitor{stop: make(chan struct{}), done: make(chan struct{})}
	if s == nil {
		m.none = true
		close(m.done)
		return m
	}
	read := func() {
		cs, err := s.SampleClocks(ctx)
		m.mu.Lock()
		defer m.mu.Unlock()
		if err != nil {
			m.lastErr = err
			return
		}
		m.samples = append(m.samples, cs...)
	}
	read()
	go func() {
		defer close(m.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				read()
			case <-ctx.Done():
				return
			case <-m.stop:
				read()
				return
			}
		}
	}()
	return m
}

func (m *clockMonitor) noSampler() bool { return m.none }

// finish stops sampling and waits for the last sample.
func (m *clockMonitor) finish() {
	select {
	case <-m.done:
		return
	default:
	}
	close(m.stop)
	<-m.done
}

// summary summarises GPU g's samples taken between from and to (inclusive,
// with the samples just before from and just after to, so that a short test
// still has a reading on each side).
func (m *clockMonitor) summary(g int, from, to time.Time) *ClockSummary {
	m.mu.Lock()
	defer m.mu.Unlock()
	var mine []ClockSample
	for _, s := range m.samples {
		if s.GPU == g {
			mine = append(mine, s)
		}
	}
	if len(mine) == 0 {
		msg := "no clock samples"
		if m.lastErr != nil {
			msg = m.lastErr.Error()
		}
		return &ClockSummary{Error: msg}
	}
	return new(summarizeClocks(window(mine, from, to)))
}

// window keeps the samples in [from, to] plus the last one before from and the
// first one after to.
func window(samples []ClockSample, from, to time.Time) []ClockSample {
	lo, hi := 0, len(samples)
	for i, s := range samples {
		if s.Time.Before(from) {
			lo = i
		}
		if s.Time.After(to) {
			hi = i + 1
			break
		}
	}
	return samples[lo:hi]
}
