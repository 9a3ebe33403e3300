package nvml

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpunode/gpunode/internal/gpu"
)

// testWait is the wait timeout the tests watch with.
const testWait = 10 * time.Millisecond

// step is one scripted answer of nvmlEventSetWait: an event of type typ on GPU gpu (-1: no
// device handle), or the failure ret.
type step struct {
	gpu      int
	typ      uint64
	data     uint64
	gi, ci   uint32
	ret      gonvml.Return
	lostNext bool // from this step on, the GPU answers every call with ERROR_GPU_IS_LOST
}

func event(gpu int, typ, data uint64) step {
	return step{gpu: gpu, typ: typ, data: data, gi: noInstance, ci: noInstance}
}

func failure(gpu int, ret gonvml.Return) step { return step{gpu: gpu, ret: ret} }

// script is a dgxh100 mock server whose GPUs support supported events and whose event
// sets answer Wait from steps, in order, then time out (after sleeping the timeout).
type script struct {
	srv *server.Server

	mu         sync.Mutex
	steps      []step
	waits      int
	created    int
	freed      int
	registered map[int]uint64 // per GPU, the event types registered in the latest set
	lost       map[int]bool
}

func newScript(supported uint64, steps ...step) *script {
	s := &script{srv: dgxh100.New(), steps: steps, registered: map[int]uint64{}, lost: map[int]bool{}}
	s.srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.created++
		s.registered = map[int]uint64{}
		return &mock.EventSet{WaitFunc: s.wait, FreeFunc: s.free}, gonvml.SUCCESS
	}
	for i := range s.srv.Devices {
		d := s.device(i)
		d.GetSupportedEventTypesFunc = func() (uint64, gonvml.Return) { return supported, gonvml.SUCCESS }
		d.RegisterEventsFunc = func(mask uint64, _ gonvml.EventSet) gonvml.Return {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.lost[i] {
				return gonvml.ERROR_GPU_IS_LOST
			}
			s.registered[i] |= mask
			return gonvml.SUCCESS
		}
	}
	return s
}

func (s *script) device(i int) *server.Device { return s.srv.Devices[i].(*server.Device) }

func (s *script) uuid(i int) string { return s.device(i).UUID }

func (s *script) wait(timeout uint32) (gonvml.EventData, gonvml.Return) {
	s.mu.Lock()
	s.waits++
	if len(s.steps) == 0 {
		s.mu.Unlock()
		time.Sleep(time.Duration(timeout) * time.Millisecond)
		return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	if st.lostNext {
		s.lost[st.gpu] = true
	}
	s.mu.Unlock()
	data := gonvml.EventData{EventType: st.typ, EventData: st.data, GpuInstanceId: st.gi, ComputeInstanceId: st.ci}
	if st.gpu >= 0 {
		data.Device = s.srv.Devices[st.gpu]
	}
	if st.ret != 0 {
		return data, st.ret
	}
	return data, gonvml.SUCCESS
}

func (s *script) free() gonvml.Return {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freed++
	return gonvml.SUCCESS
}

// counts returns the waits, the sets created and freed, and the registrations of the latest set.
func (s *script) counts() (waits, created, freed int, registered map[int]uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reg := make(map[int]uint64, len(s.registered))
	for k, v := range s.registered {
		reg[k] = v
	}
	return s.waits, s.created, s.freed, reg
}

// backendOf opens a backend on srv, closed at the end of the test.
func backendOf(t *testing.T, srv gonvml.Interface) *Backend {
	t.Helper()
	b, err := New(WithLibrary(srv))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { closeBackend(t, b) })
	return b
}

// receive reads n events, failing the test after 5 s without one.
func receive(t *testing.T, ch <-chan gpu.Event, n int) []gpu.Event {
	t.Helper()
	var got []gpu.Event
	for len(got) < n {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed after %d events, want %d: %v", len(got), n, brief(got))
			}
			got = append(got, e)
		case <-time.After(5 * time.Second):
			t.Fatalf("no event after 5 s; got %d of %d: %v", len(got), n, brief(got))
		}
	}
	return got
}

// closes waits for ch to close and returns the events still delivered before it did.
func closes(t *testing.T, ch <-chan gpu.Event) []gpu.Event {
	t.Helper()
	var extra []gpu.Event
	deadline := time.After(5 * time.Second)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				return extra
			}
			extra = append(extra, e)
		case <-deadline:
			t.Fatal("the event channel did not close within 5 s")
			return extra
		}
	}
}

// settles fails the test when the goroutine count does not come back to before within 2 s.
func settles(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			n := runtime.Stack(buf, true)
			t.Fatalf("goroutines: %d, want at most %d\n%s", runtime.NumGoroutine(), before, buf[:n])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// brief renders events without their time, for comparison.
func brief(evs []gpu.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = fmt.Sprintf("%s gpu=%d uuid=%s xid=%d data=%d action=%s gi=%d ci=%d",
			e.Kind, e.Index, e.UUID, e.XID, e.Data, e.RecoveryAction, e.GPUInstance, e.ComputeInstance)
	}
	return out
}

func want(kind gpu.EventKind, index int, uuid string) gpu.Event {
	return gpu.Event{Kind: kind, Index: index, UUID: uuid, GPUInstance: -1, ComputeInstance: -1}
}

func TestWatchTranslatesAScriptedSequence(t *testing.T) {
	before := runtime.NumGoroutine()
	sbe := event(1, gonvml.EventTypeSingleBitEccError, 0)
	sbe.gi, sbe.ci = 3, 1
	lost6 := failure(6, gonvml.ERROR_GPU_IS_LOST)
	lost6.lostNext = true
	s := newScript(gonvml.EventTypeAll,
		failure(-1, gonvml.ERROR_TIMEOUT),
		event(2, gonvml.EventTypeXidCriticalError, 79),
		event(5, gonvml.EventTypeDoubleBitEccError, 0),
		lost6,
		failure(-1, gonvml.ERROR_TIMEOUT),
		sbe,
		event(0, gonvml.EventTypeGpuRecoveryAction, 2),
		event(4, gonvml.EventTypeGpuUnavailableError, 0),
		event(7, gonvml.EventTypeXidCriticalError, 13),
	)
	b := backendOf(t, s.srv)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.watch(ctx, testWait)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	got := receive(t, ch, 8)

	xid79 := want(gpu.EventXID, 2, s.uuid(2))
	xid79.XID, xid79.Data = 79, 79
	sbeWant := want(gpu.EventECCSingleBit, 1, s.uuid(1))
	sbeWant.GPUInstance, sbeWant.ComputeInstance = 3, 1
	action := want(gpu.EventRecoveryAction, 0, s.uuid(0))
	action.Data, action.RecoveryAction = 2, gpu.RecoveryNodeReboot
	xid13 := want(gpu.EventXID, 7, s.uuid(7))
	xid13.XID, xid13.Data = 13, 13
	wantEvs := []gpu.Event{
		xid79, want(gpu.EventGPULost, 2, s.uuid(2)),
		want(gpu.EventECCDoubleBit, 5, s.uuid(5)),
		want(gpu.EventGPULost, 6, s.uuid(6)),
		sbeWant, action,
		want(gpu.EventGPUUnavailable, 4, s.uuid(4)),
		xid13,
	}
	if g, w := strings.Join(brief(got), "\n"), strings.Join(brief(wantEvs), "\n"); g != w {
		t.Errorf("events:\n%s\nwant:\n%s", g, w)
	}
	for _, e := range got {
		if e.Time.IsZero() {
			t.Errorf("event %s has no time", e.Kind)
		}
	}
	_, created, _, registered := s.counts()
	if created != 3 {
		t.Errorf("event sets created: %d, want 3 (the first, then one after each lost GPU)", created)
	}
	for i := range 8 {
		wantMask := watchedEvents
		if i == 2 || i == 6 {
			wantMask = 0
		}
		if registered[i] != wantMask {
			t.Errorf("GPU %d registered for %#x in the latest set, want %#x", i, registered[i], wantMask)
		}
	}
	cancel()
	if extra := closes(t, ch); len(extra) != 0 {
		t.Errorf("unexpected events after the script: %v", brief(extra))
	}
	if _, created, freed, _ := s.counts(); freed != created {
		t.Errorf("event sets freed: %d of %d", freed, created)
	}
	settles(t, before)
}

func TestWatchRegistersWhatEachGPUSupports(t *testing.T) {
	tests := []struct {
		name      string
		supported uint64
		setup     func(s *script)
		wantMask  map[int]uint64 // GPUs not listed: the whole watched mask
		firstLost int            // a GPU whose EventGPULost comes first; -1 for none
	}{
		{
			name:      "a GPU that supports every type is registered for the five watched ones",
			supported: gonvml.EventTypeAll, firstLost: -1,
		},
		{
			name:      "a GPU that supports none of the watched types is skipped",
			supported: gonvml.EventTypeAll, firstLost: -1,
			setup: func(s *script) {
				s.device(3).GetSupportedEventTypesFunc = func() (uint64, gonvml.Return) {
					return gonvml.EventTypePState | gonvml.EventTypeClock, gonvml.SUCCESS
				}
			},
			wantMask: map[int]uint64{3: 0},
		},
		{
			name:      "a GPU whose supported-types call fails is skipped",
			supported: gonvml.EventTypeAll, firstLost: -1,
			setup: func(s *script) {
				s.device(5).GetSupportedEventTypesFunc = nil
			},
			wantMask: map[int]uint64{5: 0},
		},
		{
			name:      "only the supported part of the mask is registered",
			supported: gonvml.EventTypeXidCriticalError | gonvml.EventTypeDoubleBitEccError | gonvml.EventTypePState,
			firstLost: -1,
			wantMask: func() map[int]uint64 {
				m := map[int]uint64{}
				for i := range 8 {
					m[i] = gonvml.EventTypeXidCriticalError | gonvml.EventTypeDoubleBitEccError
				}
				return m
			}(),
		},
		{
			name:      "a GPU that refuses the whole mask keeps the types it accepts",
			supported: gonvml.EventTypeAll, firstLost: -1,
			setup: func(s *script) {
				reg := s.device(1).RegisterEventsFunc
				s.device(1).RegisterEventsFunc = func(mask uint64, set gonvml.EventSet) gonvml.Return {
					if mask&gonvml.EventTypeSingleBitEccError != 0 {
						return gonvml.ERROR_NOT_SUPPORTED
					}
					return reg(mask, set)
				}
			},
			wantMask: map[int]uint64{1: watchedEvents &^ gonvml.EventTypeSingleBitEccError},
		},
		{
			name:      "a GPU lost at registration is reported and the others are watched",
			supported: gonvml.EventTypeAll, firstLost: 4,
			setup:    func(s *script) { s.lost[4] = true },
			wantMask: map[int]uint64{4: 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript(tt.supported)
			if tt.setup != nil {
				tt.setup(s)
			}
			b := backendOf(t, s.srv)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch, err := b.watch(ctx, testWait)
			if err != nil {
				t.Fatalf("Watch: %v", err)
			}
			if tt.firstLost >= 0 {
				got := receive(t, ch, 1)[0]
				if got.Kind != gpu.EventGPULost || got.Index != tt.firstLost || got.UUID != s.uuid(tt.firstLost) {
					t.Errorf("first event %v, want GPU %d lost", brief([]gpu.Event{got}), tt.firstLost)
				}
			}
			_, _, _, registered := s.counts()
			for i := range 8 {
				w, ok := tt.wantMask[i]
				if !ok {
					w = watchedEvents
				}
				if registered[i] != w {
					t.Errorf("GPU %d registered for %#x, want %#x", i, registered[i], w)
				}
			}
			cancel()
			closes(t, ch)
		})
	}
}
