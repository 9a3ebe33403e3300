package gputest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// hangAfter bounds a wait for a channel to deliver or close: past it the backend is taken
// to hang (a guard against a test that never ends, not a measure of speed).
const hangAfter = 30 * time.Second

// optional is b as the optional interface I (named name), or skips the clause, saying so,
// when the backend does not implement it.
func optional[I any](t *testing.T, b gpu.Backend, name string) I {
	t.Helper()
	v, ok := b.(I)
	if !ok {
		closeTwice(t, b)
		t.Skipf("the %s backend is no %s (optional)", b.Name(), name)
	}
	return v
}

// eventKinds are the kinds gpu.Event may have.
var eventKinds = []gpu.EventKind{gpu.EventXID, gpu.EventECCSingleBit, gpu.EventECCDoubleBit,
	gpu.EventRecoveryAction, gpu.EventGPUUnavailable, gpu.EventGPULost}

// eventChecks are the clauses of gpu.EventSource.
var eventChecks = []check{
	{"a watch with a cancelled context does not start", func(t *testing.T, _ *suite, b gpu.Backend) {
		es := optional[gpu.EventSource](t, b, "gpu.EventSource")
		defer closeTwice(t, b)
		if ch, err := es.Watch(cancelled()); err == nil {
			t.Errorf("Watch with a cancelled context started (channel %v)", ch)
		}
	}},
	{"a watch delivers well-formed events of the snapshot's GPUs and closes its channel when the context ends", func(t *testing.T, s *suite, b gpu.Backend) {
		es := optional[gpu.EventSource](t, b, "gpu.EventSource")
		defer closeTwice(t, b)
		snap := snapshot(t, b)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch, err := es.Watch(ctx)
		if err != nil && s.events != nil {
			t.Fatalf("Watch: %v (the test provokes events: the watch must start)", err)
		}
		if err != nil {
			// A source that cannot watch at all says so; on a driver without events that is
			// gpu.ErrNotSupported. Both are the contract: the monitor goes on without events.
			t.Skipf("Watch: %v (not supported: %v)", err, errors.Is(err, gpu.ErrNotSupported))
		}
		if ch == nil {
			t.Fatal("Watch returned no channel and no error")
		}
		want := 0
		if s.events != nil {
			want = s.events(t, b)
		}
		for i := range want {
			select {
			case e, open := <-ch:
				if !open {
					t.Fatalf("the channel closed after %d of %d events, before the context ended", i, want)
				}
				checkEvent(t, snap, e)
			case <-time.After(hangAfter):
				t.Fatalf("%d of %d events delivered; none more in %v", i, want, hangAfter)
			}
		}
		cancel()
		deadline := time.After(hangAfter)
		for {
			select {
			case e, open := <-ch:
				if !open {
					return
				}
				checkEvent(t, snap, e)
			case <-deadline:
				t.Fatalf("the channel did not close in %v after the context ended", hangAfter)
			}
		}
	}},
}

// checkEvent holds one event to gpu.Event's documentation.
func checkEvent(t *testing.T, snap *gpu.Snapshot, e gpu.Event) {
	t.Helper()
	where := fmt.Sprintf("%s event of GPU %d", e.Kind, e.Index)
	if !slices.Contains(eventKinds, e.Kind) {
		t.Errorf("%s: kind %q is none of gpu's event kinds", where, e.Kind)
	}
	if e.Time.IsZero() {
		t.Errorf("%s has no time", where)
	}
	d, ok := deviceOf(snap, e.Index)
	switch {
	case !ok:
		t.Errorf("%s: the snapshot has no GPU %d", where, e.Index)
	case e.UUID != d.UUID:
		t.Errorf("%s names UUID %q, the snapshot's GPU %d is %q", where, e.UUID, e.Index, d.UUID)
	}
	if e.Kind == gpu.EventXID && e.XID <= 0 {
		t.Errorf("%s has no XID code", where)
	}
	if e.Kind == gpu.EventRecoveryAction && e.RecoveryAction == "" {
		t.Errorf("%s has no recovery action", where)
	}
	if e.GPUInstance < -1 || e.ComputeInstance < -1 {
		t.Errorf("%s: MIG instance %d/%d, want an id or -1 for none", where, e.GPUInstance, e.ComputeInstance)
	}
}

// telemetryChecks are the clauses of gpu.TelemetrySource.
var telemetryChecks = []check{
	{"telemetry reads the snapshot's GPUs in its order, with per-value errors", func(t *testing.T, _ *suite, b gpu.Backend) {
		ts := optional[gpu.TelemetrySource](t, b, "gpu.TelemetrySource")
		defer closeTwice(t, b)
		snap := snapshot(t, b)
		tel, err := ts.Telemetry(context.Background())
		if err != nil {
			t.Fatalf("Telemetry: %v", err)
		}
		if tel.Time.IsZero() {
			t.Error("the telemetry has no time")
		}
		var indexes []int
		var uuids []string
		for _, d := range tel.Devices {
			indexes, uuids = append(indexes, d.Index), append(uuids, d.UUID)
			checkFieldErrors(t, fmt.Sprintf("telemetry of GPU %d", d.Index), d.Errors)
		}
		if err := sameDevices(snap, indexes, uuids); err != nil {
			t.Errorf("telemetry and snapshot disagree: %v", err)
		}
	}},
	{"a cancelled context ends a telemetry read with the context's error", func(t *testing.T, _ *suite, b gpu.Backend) {
		ts := optional[gpu.TelemetrySource](t, b, "gpu.TelemetrySource")
		defer closeTwice(t, b)
		_, err := ts.Telemetry(cancelled())
		wantCanceled(t, "Telemetry", err)
	}},
}

// processChecks are the clauses of gpu.ProcessLister.
var processChecks = []check{
	{"the processes of every GPU that answers can be listed", func(t *testing.T, _ *suite, b gpu.Backend) {
		pl := optional[gpu.ProcessLister](t, b, "gpu.ProcessLister")
		defer closeTwice(t, b)
		for _, d := range snapshot(t, b).Devices {
			if d.UUID == "" || d.Unreachable() != nil {
				continue
			}
			procs, err := pl.Processes(context.Background(), d.UUID)
			if err != nil {
				t.Errorf("Processes of GPU %d (%s): %v", d.Index, d.UUID, err)
			}
			for _, p := range procs {
				if p.PID == 0 || (p.Kind != "compute" && p.Kind != "graphics") {
					t.Errorf("GPU %d: process %+v, want a PID and kind compute or graphics", d.Index, p)
				}
			}
		}
	}},
	{"the processes of a GPU that does not exist are an error", func(t *testing.T, _ *suite, b gpu.Backend) {
		pl := optional[gpu.ProcessLister](t, b, "gpu.ProcessLister")
		defer closeTwice(t, b)
		const unknown = "GPU-00000000-0000-0000-0000-000000000000"
		if procs, err := pl.Processes(context.Background(), unknown); err == nil {
			t.Errorf("Processes(%s) = %v and no error, want an error", unknown, procs)
		}
	}},
	{"a cancelled context ends a process listing with the context's error", func(t *testing.T, _ *suite, b gpu.Backend) {
		pl := optional[gpu.ProcessLister](t, b, "gpu.ProcessLister")
		defer closeTwice(t, b)
		uuid := "GPU-00000000-0000-0000-0000-000000000000"
		if devs := snapshot(t, b).Devices; len(devs) > 0 && devs[0].UUID != "" {
			uuid = devs[0].UUID
		}
		_, err := pl.Processes(cancelled(), uuid)
		wantCanceled(t, "Processes", err)
	}},
}
