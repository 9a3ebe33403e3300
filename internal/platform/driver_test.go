package platform

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// waitState waits until the driver's state satisfies ok (the test's deadline bounds it).
func waitState(t *testing.T, ctx context.Context, d *Driver, what string, ok func(DriverState) bool) DriverState {
	t.Helper()
	for {
		ch := d.Changed()
		if s := d.State(); ok(s) {
			return s
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the driver never became %s: %+v", what, d.State())
		case <-ch:
		}
	}
}

// flaky opens a simulated backend after failing the first fails opens.
type flaky struct {
	fails         int32
	opens, closes atomic.Int32
	b             *sim.Backend
}

func (f *flaky) open() (gpu.Backend, error) {
	if n := f.opens.Add(1); n <= f.fails {
		return nil, errors.New("nvmlInit: driver not loaded")
	}
	return f.b, nil
}

func (f *flaky) release(gpu.Backend) error { f.closes.Add(1); return nil }

func newFlaky(t *testing.T, fails int32) (*flaky, *Driver) {
	t.Helper()
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	f := &flaky{fails: fails, b: b}
	return f, NewDriver("sim", f.open, f.release, time.Millisecond, 4*time.Millisecond, nil)
}

func TestADriverThatIsNotThereIsWaitedForWithBackoff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, d := newFlaky(t, 3)
	if _, err := d.Snapshot(ctx); !errors.Is(err, gpu.ErrDriverNotFound) {
		t.Fatalf("before it opened: %v, want gpu.ErrDriverNotFound", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	s := waitState(t, ctx, d, "loaded", func(s DriverState) bool { return s.Loaded })
	if f.opens.Load() != 4 || s.Since.IsZero() {
		t.Errorf("opened after %d tries (want 4), since %v", f.opens.Load(), s.Since)
	}
	snap, err := d.Snapshot(ctx)
	if err != nil || len(snap.Devices) != 8 {
		t.Fatalf("snapshot once loaded: %v", err)
	}
	cancel()
	<-done
	if f.closes.Load() != 1 {
		t.Errorf("released %d times at the end, want 1", f.closes.Load())
	}
}

func TestAPauseEndsTheSessionsAndReleasesTheDriverUntilResumed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, d := newFlaky(t, 0)
	go d.Run(ctx)
	_, sctx, done, err := d.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events, err := d.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d.Pause("nvidia.com/gpu.deploy.driver=paused-for-driver-upgrade")
	<-sctx.Done() // the session ends first...
	if f.closes.Load() != 0 {
		t.Fatal("released while a session still held the backend")
	}
	done() // ...and the backend is released once its holder is done
	s := waitState(t, ctx, d, "paused", func(s DriverState) bool { return s.Paused != "" && !s.Loaded })
	if f.closes.Load() != 1 || !strings.Contains(s.Message, "paused-for-driver-upgrade") {
		t.Errorf("released %d times, state %+v", f.closes.Load(), s)
	}
	if _, err := d.Telemetry(ctx); err == nil || !strings.Contains(err.Error(), "released") {
		t.Errorf("telemetry while paused: %v, want the GPUs released", err)
	}
	d.Pause("")
	waitState(t, ctx, d, "loaded again", func(s DriverState) bool { return s.Loaded && s.Paused == "" })
	// The event watch goes on across the release: an event of the new session arrives.
	// Its watch starts soon after the reopen; the fault is injected until it is watched.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := f.b.Inject(sim.Fault{Type: sim.FaultXID, GPU: 0, XID: 79}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-events:
			if ev.XID != 79 {
				t.Errorf("event %+v, want XID 79", ev)
			}
			return
		case <-ctx.Done():
			t.Fatal("no event after the resume")
		case <-tick.C:
		}
	}
}

func TestADriverThatGoesAwayIsWaitedForAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root := t.TempDir()
	file := filepath.Join(root, "run", "nvidia", "driver-version")
	p, err := Open(Options{Sim: "h100x8", HostRoot: root, SimDriverFile: "/run/nvidia/driver-version", WaitForDriver: true})
	if err != nil {
		t.Fatal(err)
	}
	d := p.Driver()
	go p.RunDriver(ctx)
	s := waitState(t, ctx, d, "waiting", func(s DriverState) bool { return !s.Loaded && strings.Contains(s.Message, "absent") })
	if !strings.Contains(s.Message, file) {
		t.Errorf("message %q does not name %s", s.Message, file)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("580.95.05\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, d, "loaded", func(s DriverState) bool { return s.Loaded })
	if snap, err := p.Backend.Snapshot(ctx); err != nil || snap.Driver.Version != "580.95.05" {
		t.Fatalf("%v", err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Backend.Snapshot(ctx); !errors.Is(err, gpu.ErrDriverNotFound) {
		t.Fatalf("snapshot after the unload: %v", err)
	}
	waitState(t, ctx, d, "waiting again", func(s DriverState) bool { return !s.Loaded })
}
