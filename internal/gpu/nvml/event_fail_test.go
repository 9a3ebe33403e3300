package nvml

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/gpunode/gpunode/internal/gpu"
)

func TestWatchFailsCleanlyWhenNothingCanBeWatched(t *testing.T) {
	tests := []struct {
		name         string
		setup        func(s *script, b *Backend) context.Context
		notSupported bool
		text         string
		setsLeft     bool // an event set was created and must have been freed
	}{
		{
			name: "no GPU supporting a watched type is not supported",
			setup: func(s *script, _ *Backend) context.Context {
				for i := range s.srv.Devices {
					s.device(i).GetSupportedEventTypesFunc = func() (uint64, gonvml.Return) { return gonvml.EventTypePState, gonvml.SUCCESS }
				}
				return context.Background()
			},
			notSupported: true, setsLeft: true,
			text: "nvml watch: not supported: no GPU supports XID, ECC, recovery-action or unavailable events (GPU 0: not supported: supports none of the watched event types (supported mask 0x4)",
		},
		{
			name: "a library without event sets is not supported",
			setup: func(s *script, _ *Backend) context.Context {
				s.srv.EventSetCreateFunc = nil
				return context.Background()
			},
			notSupported: true,
			text:         "nvml watch: nvmlEventSetCreate: not supported: not implemented by this NVML library",
		},
		{
			name: "GPUs whose mock lacks the event calls are not supported",
			setup: func(s *script, _ *Backend) context.Context {
				for i := range s.srv.Devices {
					s.device(i).GetSupportedEventTypesFunc = nil
				}
				return context.Background()
			},
			notSupported: true, setsLeft: true,
			text: "nvml watch: not supported: no GPU supports",
		},
		{
			name: "a registration that fails is reported with NVML's text",
			setup: func(s *script, _ *Backend) context.Context {
				for i := range s.srv.Devices {
					s.device(i).RegisterEventsFunc = func(uint64, gonvml.EventSet) gonvml.Return { return gonvml.ERROR_UNKNOWN }
				}
				return context.Background()
			},
			setsLeft: true,
			text:     "nvml watch: no GPU could be registered for events: GPU 0: nvmlDeviceRegisterEvents: ERROR_UNKNOWN",
		},
		{
			name: "a host without GPUs has nothing to watch",
			setup: func(s *script, _ *Backend) context.Context {
				s.srv.DeviceGetCountFunc = func() (int, gonvml.Return) { return 0, gonvml.SUCCESS }
				return context.Background()
			},
			notSupported: true,
			text:         "nvml watch: not supported: no GPU to watch",
		},
		{
			name: "a closed backend cannot watch",
			setup: func(_ *script, b *Backend) context.Context {
				_ = b.Close()
				return context.Background()
			},
			text: "nvml watch: backend is closed",
		},
		{
			name: "an ended context cannot watch",
			setup: func(_ *script, _ *Backend) context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			},
			text: "nvml watch: context canceled",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript(gonvml.EventTypeAll)
			b := backendOf(t, s.srv)
			ctx := tt.setup(s, b)
			ch, err := b.watch(ctx, testWait)
			if err == nil {
				t.Fatalf("Watch succeeded (channel %v), want an error", ch)
			}
			if got := errors.Is(err, gpu.ErrNotSupported); got != tt.notSupported {
				t.Errorf("errors.Is(ErrNotSupported) = %v, want %v (%v)", got, tt.notSupported, err)
			}
			if !strings.HasPrefix(err.Error(), tt.text) {
				t.Errorf("error %q, want it to start with %q", err, tt.text)
			}
			_, created, freed, _ := s.counts()
			if tt.setsLeft && (created != 1 || freed != 1) {
				t.Errorf("event sets created %d, freed %d; want 1 and 1", created, freed)
			}
		})
	}
}

func TestWatchSurvivesAnEventSetWithoutMethods(t *testing.T) {
	before := runtime.NumGoroutine()
	s := newScript(gonvml.EventTypeAll)
	s.srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) { return &mock.EventSet{}, gonvml.SUCCESS }
	b := backendOf(t, s.srv)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.watch(ctx, testWait)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	select {
	case e, ok := <-ch:
		t.Fatalf("got %v (open %v) from an event set that cannot wait, want the channel to stay open and empty", brief([]gpu.Event{e}), ok)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	closes(t, ch)
	settles(t, before)
}

func TestWatchRetriesAFailingWaitWithPausesNotASpin(t *testing.T) {
	s := newScript(gonvml.EventTypeAll)
	var waits atomic.Int64
	s.srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) {
		s.mu.Lock()
		s.created++
		s.mu.Unlock()
		return &mock.EventSet{
			WaitFunc: func(uint32) (gonvml.EventData, gonvml.Return) {
				waits.Add(1)
				return gonvml.EventData{}, gonvml.ERROR_UNKNOWN
			},
			FreeFunc: s.free,
		}, gonvml.SUCCESS
	}
	b := backendOf(t, s.srv)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.watch(ctx, testWait)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	time.Sleep(400 * time.Millisecond)
	cancel()
	closes(t, ch)
	// Pauses of 10, 20, 40, 80, 160 ms: about six waits in 400 ms; a spin makes millions.
	if n := waits.Load(); n < 2 || n > 30 {
		t.Errorf("%d waits in 400 ms, want between 2 and 30", n)
	}
	if _, created, freed, _ := s.counts(); created < 2 || freed != created {
		t.Errorf("event sets created %d, freed %d; want the set rebuilt after %d failures, all freed", created, freed, rebuildAfter)
	}
}

func TestWatchFindsALostGPUThatWaitDoesNotName(t *testing.T) {
	s := newScript(gonvml.EventTypeAll, failure(-1, gonvml.ERROR_GPU_IS_LOST), event(0, gonvml.EventTypeXidCriticalError, 13))
	s.device(3).GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{}, gonvml.ERROR_GPU_IS_LOST }
	b := backendOf(t, s.srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := b.watch(ctx, testWait)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	got := receive(t, ch, 2)
	if got[0].Kind != gpu.EventGPULost || got[0].Index != 3 || got[0].UUID != s.uuid(3) {
		t.Errorf("first event %v, want GPU 3 lost", brief(got[:1]))
	}
	if !strings.Contains(got[0].Message, "ERROR_GPU_IS_LOST") {
		t.Errorf("lost event message %q does not give NVML's reason", got[0].Message)
	}
	if got[1].Kind != gpu.EventXID || got[1].Index != 0 {
		t.Errorf("second event %v, want the Xid 13 of GPU 0 (the others stay watched)", brief(got[1:]))
	}
	if _, _, _, reg := s.counts(); reg[3] != 0 || reg[0] != watchedEvents {
		t.Errorf("latest set registrations %v, want GPU 3 out and the others in", reg)
	}
}

func TestWatchStopsCallingNVMLWhenEveryGPUIsLost(t *testing.T) {
	var steps []step
	for i := range 8 {
		st := failure(i, gonvml.ERROR_GPU_IS_LOST)
		st.lostNext = true
		steps = append(steps, st)
	}
	s := newScript(gonvml.EventTypeAll, steps...)
	b := backendOf(t, s.srv)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.watch(ctx, testWait)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	got := receive(t, ch, 8)
	for i, e := range got {
		if e.Kind != gpu.EventGPULost || e.Index != i {
			t.Errorf("event %d: %v, want GPU %d lost", i, brief([]gpu.Event{e}), i)
		}
	}
	waits, _, _, _ := s.counts()
	time.Sleep(50 * time.Millisecond)
	if later, _, _, _ := s.counts(); later != waits {
		t.Errorf("%d more waits after every GPU was lost, want none", later-waits)
	}
	select {
	case e, ok := <-ch:
		t.Errorf("got %v (open %v) after every GPU was lost, want an open, empty channel", brief([]gpu.Event{e}), ok)
	default:
	}
	cancel()
	closes(t, ch)
	if _, created, freed, _ := s.counts(); freed != created {
		t.Errorf("event sets freed: %d of %d", freed, created)
	}
}

func TestCloseEndsWatchesAndNoNVMLCallFollowsShutdown(t *testing.T) {
	before := runtime.NumGoroutine()
	s := newScript(gonvml.EventTypeAll)
	var shut, after atomic.Bool
	s.srv.ShutdownFunc = func() gonvml.Return { shut.Store(true); return gonvml.SUCCESS }
	s.srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(ms uint32) (gonvml.EventData, gonvml.Return) {
				if shut.Load() {
					after.Store(true)
				}
				time.Sleep(time.Duration(ms) * time.Millisecond)
				return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
			},
			FreeFunc: func() gonvml.Return {
				if shut.Load() {
					after.Store(true)
				}
				return gonvml.SUCCESS
			},
		}, gonvml.SUCCESS
	}
	b, err := New(WithLibrary(s.srv))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var chans []<-chan gpu.Event
	for range 3 {
		ch, err := b.watch(ctx, testWait)
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		chans = append(chans, ch)
	}
	time.Sleep(30 * time.Millisecond)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, ch := range chans {
		closes(t, ch)
	}
	if after.Load() {
		t.Error("a watcher called NVML after nvmlShutdown")
	}
	settles(t, before)
}

func TestBackoffDoublesUpToItsBound(t *testing.T) {
	tests := []struct {
		name string
		n    int
		want time.Duration
	}{
		{"no failure waits the base", 0, 500 * time.Millisecond},
		{"the first failure waits the base", 1, 500 * time.Millisecond},
		{"the third failure waits four times the base", 3, 2 * time.Second},
		{"many failures wait the bound", 50, maxBackoff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := backoff(500*time.Millisecond, tt.n); got != tt.want {
				t.Errorf("backoff(500ms, %d) = %v, want %v", tt.n, got, tt.want)
			}
		})
	}
}
