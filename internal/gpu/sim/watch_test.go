package sim

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// watching starts a watch that ends with the test.
func watching(t *testing.T, b *Backend) <-chan gpu.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := b.Watch(ctx)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	return ch
}

// next reads n events, failing after 5 s without one.
func next(t *testing.T, ch <-chan gpu.Event, n int) []gpu.Event {
	t.Helper()
	var got []gpu.Event
	for len(got) < n {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed after %d of %d events: %s", len(got), n, show(got))
			}
			got = append(got, e)
		case <-time.After(5 * time.Second):
			t.Fatalf("no event after 5 s; got %d of %d: %s", len(got), n, show(got))
		}
	}
	return got
}

// show renders events without their time and message.
func show(evs []gpu.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "[%s gpu=%d xid=%d data=%d action=%s gi=%d ci=%d] ",
			e.Kind, e.Index, e.XID, e.Data, e.RecoveryAction, e.GPUInstance, e.ComputeInstance)
	}
	return strings.TrimSpace(b.String())
}

// marker is a fault whose event ends a batch: events before it came from what preceded it.
var marker = Fault{GPU: 7, Type: FaultXID, XID: 13, Message: "marker"}

func isMarker(e gpu.Event) bool {
	return e.Kind == gpu.EventXID && e.Index == 7 && e.Message == "marker"
}

func ev(kind gpu.EventKind, index int) gpu.Event {
	return gpu.Event{Kind: kind, Index: index, GPUInstance: -1, ComputeInstance: -1}
}

func xidEv(index, xid int) gpu.Event {
	e := ev(gpu.EventXID, index)
	e.XID, e.Data = xid, uint64(xid)
	return e
}

func TestInjectedFaultsBecomeTheirEvents(t *testing.T) {
	one, zero := 1, 0
	withData := func(e gpu.Event, data uint64) gpu.Event { e.Data = data; return e }
	action := func(a gpu.RecoveryAction, code uint64) gpu.Event {
		e := ev(gpu.EventRecoveryAction, 3)
		e.RecoveryAction, e.Data = a, code
		return e
	}
	mig := xidEv(3, 94)
	mig.GPUInstance, mig.ComputeInstance = 1, 0
	tests := []struct {
		name  string
		fault Fault
		want  []gpu.Event
	}{
		{"xid 13 is one xid event", Fault{GPU: 3, Type: FaultXID, XID: 13}, []gpu.Event{xidEv(3, 13)}},
		{"xid 79 is an xid event and the GPU lost", Fault{GPU: 3, Type: FaultXID, XID: 79},
			[]gpu.Event{xidEv(3, 79), ev(gpu.EventGPULost, 3)}},
		{"xid 48 is an xid event and a double-bit error", Fault{GPU: 3, Type: FaultXID, XID: 48},
			[]gpu.Event{xidEv(3, 48), withData(ev(gpu.EventECCDoubleBit, 3), 1)}},
		{"xid 154 is an xid event and the action its text names", Fault{GPU: 3, Type: FaultXID, XID: 154,
			Message: "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"},
			[]gpu.Event{xidEv(3, 154), action(gpu.RecoveryNodeReboot, 2)}},
		{"xid 154 without text or action asks for a GPU reset", Fault{GPU: 3, Type: FaultXID, XID: 154},
			[]gpu.Event{xidEv(3, 154), action(gpu.RecoveryGPUReset, 1)}},
		{"a MIG-attributed xid carries its instances", Fault{GPU: 3, Type: FaultXID, XID: 94, GPUInstance: &one, ComputeInstance: &zero},
			[]gpu.Event{mig, withData(ev(gpu.EventECCDoubleBit, 3), 1)}},
		{"ecc-corrected is a single-bit event with its count", Fault{GPU: 3, Type: FaultECCCorrected, Count: 5},
			[]gpu.Event{withData(ev(gpu.EventECCSingleBit, 3), 5)}},
		{"ecc-uncorrected is a double-bit event", Fault{GPU: 3, Type: FaultECCUncorrected},
			[]gpu.Event{withData(ev(gpu.EventECCDoubleBit, 3), 1)}},
		{"recovery-action is a recovery-action event", Fault{GPU: 3, Type: FaultRecoveryAction, Action: gpu.RecoveryDrainAndReset},
			[]gpu.Event{action(gpu.RecoveryDrainAndReset, 4)}},
		{"gpu-lost is a gpu-lost event", Fault{GPU: 3, Type: FaultGPULost}, []gpu.Event{ev(gpu.EventGPULost, 3)}},
		{"a state-only fault raises no event", Fault{GPU: 3, Type: FaultPCIeDowngrade, LinkGen: 3}, nil},
		{"a kernel-log line raises no event", Fault{Type: FaultKernelLog, Message: "NVRM: hello"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			b := load(t, "h100x8", WithClock(clk.Now))
			ch := watching(t, b)
			clk.Advance(42 * time.Second)
			if err := b.Inject(tt.fault); err != nil {
				t.Fatalf("Inject: %v", err)
			}
			if err := b.Inject(marker); err != nil {
				t.Fatalf("Inject marker: %v", err)
			}
			got := next(t, ch, len(tt.want)+1)
			if !isMarker(got[len(got)-1]) {
				t.Fatalf("events %s do not end with the marker", show(got))
			}
			got = got[:len(got)-1]
			if show(got) != show(tt.want) {
				t.Errorf("events %s, want %s", show(got), show(tt.want))
			}
			uuid := snapshot(t, b).Devices[3].UUID
			for _, e := range got {
				if e.UUID != uuid || !e.Time.Equal(clk.Now()) {
					t.Errorf("%s event: uuid %s at %v, want %s at %v", e.Kind, e.UUID, e.Time, uuid, clk.Now())
				}
			}
		})
	}
}

func TestTimedFaultsArriveWhenTheClockReachesThem(t *testing.T) {
	s, err := Parse("timed.yaml", []byte(`apiVersion: gpunode.dev/sim/v1
preset: h100x8
faults:
  - {at: 0s, gpu: 0, type: ecc-corrected}
  - {at: 10s, gpu: 1, type: ecc-uncorrected}
  - {at: 30s, gpu: 2, type: xid, xid: 79}
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	clk := newClock()
	start := clk.Now()
	b, err := New(s, WithClock(clk.Now))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ch := watching(t, b)

	clk.Advance(9 * time.Second)
	b.Tick()
	if err := b.Inject(marker); err != nil {
		t.Fatalf("Inject: %v", err)
	}
	if got := next(t, ch, 1); !isMarker(got[0]) {
		t.Fatalf("at 9s got %s, want only the marker (the 0s fault came before the watch, the 10s one is not due)", show(got))
	}

	clk.Advance(time.Second)
	b.Tick()
	got := next(t, ch, 1)[0]
	if got.Kind != gpu.EventECCDoubleBit || got.Index != 1 || !got.Time.Equal(start.Add(10*time.Second)) {
		t.Errorf("at 10s got %s at %v, want GPU 1's double-bit error at start+10s", show([]gpu.Event{got}), got.Time)
	}

	clk.Advance(19 * time.Second)
	one := Fault{GPU: 5, Type: FaultECCCorrected}
	if err := b.Inject(one); err != nil { // at 29s: before the 30s fault
		t.Fatalf("Inject: %v", err)
	}
	clk.Advance(6 * time.Second)
	b.Tick()
	evs := next(t, ch, 3)
	if show(evs) != show([]gpu.Event{func() gpu.Event { e := ev(gpu.EventECCSingleBit, 5); e.Data = 1; return e }(), xidEv(2, 79), ev(gpu.EventGPULost, 2)}) {
		t.Errorf("by 35s got %s, want the injected error then the 30s Xid 79 and its GPU lost", show(evs))
	}
	if !evs[1].Time.Equal(start.Add(30 * time.Second)) {
		t.Errorf("the Xid 79 event is stamped %v, want start+30s", evs[1].Time)
	}
}

func TestTimedFaultsArriveOnTimeWithTheRealClock(t *testing.T) {
	s, err := Parse("soon.yaml", []byte("apiVersion: gpunode.dev/sim/v1\npreset: h200x1\nfaults:\n  - {at: 50ms, gpu: 0, type: gpu-lost}\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	b, err := New(s)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ch := watching(t, b)
	got := next(t, ch, 1)[0]
	if got.Kind != gpu.EventGPULost || got.Index != 0 {
		t.Fatalf("got %s, want GPU 0 lost", show([]gpu.Event{got}))
	}
	t.Logf("the 50ms fault arrived %v after its time, without Tick", time.Since(got.Time))
}

func TestEveryWatcherGetsEveryEvent(t *testing.T) {
	b := load(t, "h100x8")
	var chans []<-chan gpu.Event
	for range 3 {
		chans = append(chans, watching(t, b))
	}
	ctx, cancel := context.WithCancel(context.Background())
	early, err := b.Watch(ctx)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	cancel()
	for range early { // a cancelled watcher closes and is forgotten
	}
	const n = 40
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range n / 4 {
				if err := b.Inject(Fault{GPU: g, Type: FaultXID, XID: 13 + i}); err != nil {
					t.Errorf("Inject: %v", err)
				}
			}
		})
	}
	wg.Wait()
	var first string
	for i, ch := range chans {
		got := next(t, ch, n)
		perGPU := map[int]int{}
		for _, e := range got {
			if e.XID != 13+perGPU[e.Index] {
				t.Errorf("watcher %d: GPU %d's Xid %d out of order", i, e.Index, e.XID)
			}
			perGPU[e.Index]++
		}
		if i == 0 {
			first = show(got)
		} else if show(got) != first {
			t.Errorf("watcher %d saw another order than watcher 0", i)
		}
	}
	b.mu.Lock()
	watchers, kept := len(b.events.watchers), len(b.events.injected)
	b.mu.Unlock()
	if watchers != 3 || kept != 0 {
		t.Errorf("%d watchers and %d injected faults kept, want 3 and 0 (all delivered)", watchers, kept)
	}
}

func TestWatchEndsWithItsContextAndLeavesNothingBehind(t *testing.T) {
	before := runtime.NumGoroutine()
	b := load(t, "h100x8")
	ctx, cancel := context.WithCancel(context.Background())
	var chans []<-chan gpu.Event
	for range 5 {
		ch, err := b.Watch(ctx)
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		chans = append(chans, ch)
	}
	for range 3 * eventBuffer { // more than a channel holds: the watchers block on sending
		if err := b.Inject(Fault{GPU: 1, Type: FaultECCCorrected}); err != nil {
			t.Fatalf("Inject: %v", err)
		}
	}
	cancel()
	for i, ch := range chans {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range ch {
			}
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("watcher %d did not close its channel after cancel", i)
		}
	}
	if _, err := b.Watch(ctx); err == nil {
		t.Error("Watch with an ended context succeeded, want an error")
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after the watches ended, want at most %d", g, before)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.events.watchers) != 0 || len(b.events.injected) != 0 {
		t.Errorf("%d watchers and %d injected faults kept after every watch ended", len(b.events.watchers), len(b.events.injected))
	}
}
