package platform

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// nextBackoff doubles the previous wait, from lo up to hi.
func nextBackoff(prev, lo, hi time.Duration) time.Duration {
	if prev < lo {
		return lo
	}
	return min(2*prev, hi)
}

// Watch delivers the open backend's events across its sessions: a release ends the
// backend's watch, and the next session's watch follows it on the same channel. The
// channel closes when ctx ends.
func (d *Driver) Watch(ctx context.Context) (<-chan gpu.Event, error) {
	out := make(chan gpu.Event, 64)
	go func() {
		defer close(out)
		for {
			b, sctx, done, err := d.Session(ctx)
			if err != nil {
				return
			}
			d.watchSession(ctx, sctx, b, out)
			done()
		}
	}()
	return out, nil
}

// watchSession forwards one session's events; a backend that cannot watch is waited out.
func (d *Driver) watchSession(ctx, sctx context.Context, b gpu.Backend, out chan<- gpu.Event) {
	es, ok := b.(gpu.EventSource)
	if !ok {
		<-sctx.Done()
		return
	}
	ch, err := es.Watch(sctx)
	if err != nil {
		d.log.Warn("GPU events not watched until the driver is opened again", "err", err)
		<-sctx.Done()
		return
	}
	for ev := range ch {
		select {
		case out <- ev:
		case <-ctx.Done():
		}
	}
}

// telemetry is the source a session installs (the NVML scrape reader), guarded by its mutex.
type telemetry struct {
	mu  sync.Mutex
	src gpu.TelemetrySource
}

// Telemetry reads the open backend's telemetry (through the session's scrape reader when
// one runs).
func (d *Driver) Telemetry(ctx context.Context) (*gpu.Telemetry, error) {
	b, unlock, err := d.current()
	if err != nil {
		return nil, err
	}
	defer unlock()
	d.tel.mu.Lock()
	src := d.tel.src
	d.tel.mu.Unlock()
	if src == nil {
		ts, ok := b.(gpu.TelemetrySource)
		if !ok {
			return nil, fmt.Errorf("the %s GPU backend has no telemetry", b.Name())
		}
		src = ts
	}
	t, err := src.Telemetry(ctx)
	return t, d.seen(err)
}

// runTelemetry runs, in each session, the scrape reader made by newSource, until ctx ends.
func (d *Driver) runTelemetry(ctx context.Context, newSource func(gpu.Backend) (gpu.TelemetrySource, func(context.Context))) {
	for {
		b, sctx, done, err := d.Session(ctx)
		if err != nil {
			return
		}
		src, run := newSource(b)
		d.tel.mu.Lock()
		d.tel.src = src
		d.tel.mu.Unlock()
		run(sctx)
		<-sctx.Done()
		d.tel.mu.Lock()
		d.tel.src = nil
		d.tel.mu.Unlock()
		done()
	}
}
