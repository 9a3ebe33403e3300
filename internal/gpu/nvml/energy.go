package nvml

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

// DefaultEnergyRefresh is how often ScrapeTelemetry reads the energy counters when its
// caller gives no interval.
const DefaultEnergyRefresh = 5 * time.Second

// ScrapeTelemetry is the gpu.TelemetrySource of a metrics exporter. Every value is read on
// each call, as Backend.Telemetry reads it, except the total energy counter: that one read
// costs about 4 ms per GPU on an H200 (32 ms a scrape on eight GPUs, against a few µs for
// any other value), so Run reads it in the background every refresh interval and a call
// serves the latest reading. The counter served is thus at most one interval old (5 s by
// default; dcgm-exporter serves values up to its 30 s collect interval old). A GPU whose
// energy has not been read yet is read during the call. Safe for concurrent use.
type ScrapeTelemetry struct {
	b     *Backend
	every time.Duration

	mu     sync.Mutex
	energy map[int]energyReading // by device index
}

// energyReading is one GPU's last energy read.
type energyReading struct {
	uuid string
	mj   uint64
	err  error
}

var _ gpu.TelemetrySource = (*ScrapeTelemetry)(nil)

// NewScrapeTelemetry returns the scrape source of b; every <= 0 means DefaultEnergyRefresh.
// Run must run for the energy counters to move.
func NewScrapeTelemetry(b *Backend, every time.Duration) *ScrapeTelemetry {
	if every <= 0 {
		every = DefaultEnergyRefresh
	}
	return &ScrapeTelemetry{b: b, every: every, energy: map[int]energyReading{}}
}

// Run refreshes the energy counters every interval until ctx ends.
func (s *ScrapeTelemetry) Run(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.refresh(ctx)
		}
	}
}

// Telemetry implements gpu.TelemetrySource.
func (s *ScrapeTelemetry) Telemetry(ctx context.Context) (*gpu.Telemetry, error) {
	t, err := s.b.telemetry(ctx, false)
	if err != nil {
		return nil, err
	}
	for i := range t.Devices {
		d := &t.Devices[i]
		if e, failed := d.Errors[gpu.FieldDevice]; failed {
			d.Errors[gpu.FieldEnergy] = e
			continue
		}
		s.mu.Lock()
		r, ok := s.energy[d.Index]
		s.mu.Unlock()
		if !ok || r.uuid != d.UUID { // never read, or another GPU at this index now
			r = s.read(ctx, d.Index)
		}
		if r.err != nil {
			d.SetErr(gpu.FieldEnergy, r.err)
		} else {
			d.EnergyMJ = r.mj
		}
	}
	return t, nil
}

// refresh reads every GPU's energy counter.
func (s *ScrapeTelemetry) refresh(ctx context.Context) {
	s.b.life.RLock()
	closed := s.b.closed
	s.b.life.RUnlock()
	if closed {
		return
	}
	count, err := get("nvmlDeviceGetCount", s.b.lib.DeviceGetCount)
	if err != nil {
		return // the next scrape reports it; a counter keeps its last reading meanwhile
	}
	for i := range count {
		if ctx.Err() != nil {
			return
		}
		s.read(ctx, i)
	}
}

// read reads GPU i's UUID and energy counter and stores them.
func (s *ScrapeTelemetry) read(ctx context.Context, i int) energyReading {
	r := s.b.readEnergy(ctx, i)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.uuid != "" || r.err != nil {
		s.energy[i] = r
	}
	return r
}

// readEnergy reads device i's UUID and total energy counter (one field value, in mJ).
func (b *Backend) readEnergy(ctx context.Context, i int) energyReading {
	if err := ctx.Err(); err != nil {
		return energyReading{err: fmt.Errorf("energy of GPU %d: %w", i, err)}
	}
	b.life.RLock()
	defer b.life.RUnlock()
	if b.closed {
		return energyReading{err: errors.New("nvml telemetry: backend is closed")}
	}
	dev, err := get("nvmlDeviceGetHandleByIndex", func() (gonvml.Device, gonvml.Return) {
		return b.lib.DeviceGetHandleByIndex(i)
	})
	if err == nil && dev == nil {
		err = errors.New("nvmlDeviceGetHandleByIndex: no handle returned")
	}
	if err != nil {
		return energyReading{err: fmt.Errorf("opening GPU %d: %w", i, err)}
	}
	r := &reader{b: b, dev: dev, d: &gpu.Device{}}
	uuid, err := val(r, "nvmlDeviceGetUUID", dev.GetUUID)
	if err != nil {
		return energyReading{err: err}
	}
	vals := []gonvml.FieldValue{telemetryFields[tfEnergy]}
	callErr := r.call("nvmlDeviceGetFieldValues", func() gonvml.Return { return dev.GetFieldValues(vals) })
	mj, err := fieldValue(vals[0], callErr)
	return energyReading{uuid: uuid, mj: mj, err: err}
}
