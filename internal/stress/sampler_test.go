package stress

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
)

func TestSummarizeClocks(t *testing.T) {
	at := func(mhz uint32, ev ...gpu.ClockEvent) ClockSample { return ClockSample{SMClockMHz: mhz, Events: ev} }
	tests := []struct {
		name          string
		samples       []ClockSample
		min, avg, max uint32
		events        []gpu.ClockEvent
		throttle      []gpu.ClockEvent
	}{
		{"no samples summarise to zeros", nil, 0, 0, 0, nil, nil},
		{"steady boost clocks have equal min, average and max", []ClockSample{at(1980), at(1980)}, 1980, 1980, 1980, nil, nil},
		{"the average rounds to the nearest MHz", []ClockSample{at(1755), at(1980), at(1980)}, 1755, 1905, 1980, nil, nil},
		{"unread clocks are left out", []ClockSample{at(0), at(1500), at(0)}, 1500, 1500, 1500, nil, nil},
		{"benign reasons are listed but do not throttle",
			[]ClockSample{at(1755, gpu.ClockEventSWPowerCap), at(1980)}, 1755, 1868, 1980,
			[]gpu.ClockEvent{gpu.ClockEventSWPowerCap}, nil},
		{"an idle sample before the load is left out of the clocks under load",
			[]ClockSample{at(345, gpu.ClockEventIdle), at(1980), at(1965)}, 1965, 1973, 1980,
			[]gpu.ClockEvent{gpu.ClockEventIdle}, nil},
		{"a GPU idle throughout keeps its idle clocks",
			[]ClockSample{at(345, gpu.ClockEventIdle), at(345, gpu.ClockEventIdle)}, 345, 345, 345,
			[]gpu.ClockEvent{gpu.ClockEventIdle}, nil},
		{"a hardware slowdown seen once throttles",
			[]ClockSample{at(1980), at(990, gpu.ClockEventHWSlowdown, gpu.ClockEventHWThermal), at(1980)}, 990, 1650, 1980,
			[]gpu.ClockEvent{gpu.ClockEventHWSlowdown, gpu.ClockEventHWThermal},
			[]gpu.ClockEvent{gpu.ClockEventHWSlowdown, gpu.ClockEventHWThermal}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := summarizeClocks(tc.samples)
			if s.Samples != len(tc.samples) || s.MinSMClockMHz != tc.min || s.AvgSMClockMHz != tc.avg || s.MaxSMClockMHz != tc.max {
				t.Fatalf("summary %+v, want %d samples min %d avg %d max %d", s, len(tc.samples), tc.min, tc.avg, tc.max)
			}
			if !slices.Equal(s.Events, tc.events) || !slices.Equal(s.Throttle, tc.throttle) {
				t.Fatalf("events %v throttle %v, want %v and %v", s.Events, s.Throttle, tc.events, tc.throttle)
			}
		})
	}
}

func TestWindowKeepsOneSampleEachSide(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var ss []ClockSample
	for i := range 10 {
		ss = append(ss, ClockSample{Time: t0.Add(time.Duration(i) * time.Second), SMClockMHz: uint32(100 + i)})
	}
	got := window(ss, t0.Add(3500*time.Millisecond), t0.Add(5500*time.Millisecond))
	if len(got) != 4 || got[0].SMClockMHz != 103 || got[3].SMClockMHz != 106 {
		t.Fatalf("window = %v, want samples 3..6", got)
	}
	if got := window(ss[:1], t0.Add(time.Hour), t0.Add(2*time.Hour)); len(got) != 1 {
		t.Fatalf("a test after the last sample keeps that sample, got %v", got)
	}
}

func simBackend(t *testing.T, scenario string) *sim.Backend {
	t.Helper()
	s, err := sim.Parse("test.yaml", []byte(scenario))
	if err != nil {
		t.Fatalf("parse scenario: %v", err)
	}
	b, err := sim.New(s)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	return b
}

func TestBackendSamplerReadsClocksAndReasonsFromTheGPUPort(t *testing.T) {
	b := simBackend(t, "apiVersion: gpunode.dev/sim/v1\npreset: h100x8\nfaults:\n  - gpu: 3\n    type: thermal-throttle\n")
	ss, err := BackendSampler{Backend: b}.SampleClocks(context.Background())
	if err != nil {
		t.Fatalf("SampleClocks: %v", err)
	}
	if len(ss) != 8 {
		t.Fatalf("%d samples, want one per GPU", len(ss))
	}
	healthy, hot := summarizeClocks(ss[:1]), summarizeClocks(ss[3:4])
	if healthy.AvgSMClockMHz != 345 || len(healthy.Throttle) != 0 {
		t.Fatalf("GPU 0: %+v, want the idle 345 MHz and no throttle", healthy)
	}
	if hot.AvgSMClockMHz != 990 || !slices.Contains(hot.Throttle, gpu.ClockEventHWThermal) {
		t.Fatalf("GPU 3: %+v, want the slowed 990 MHz and hw-thermal-slowdown", hot)
	}
}

// countingSampler returns one sample of GPU 0 a call.
type countingSampler struct{ n atomic.Int32 }

func (c *countingSampler) SampleClocks(context.Context) ([]ClockSample, error) {
	c.n.Add(1)
	return []ClockSample{{Time: time.Now(), GPU: 0, SMClockMHz: 1980}}, nil
}

func TestClockMonitorSamplesAtStartOnTicksAndAtStop(t *testing.T) {
	c := &countingSampler{}
	m := startClocks(context.Background(), c, 5*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	m.finish()
	n := c.n.Load()
	if n < 3 {
		t.Fatalf("%d samples in 100 ms at 5 ms, want the first, some ticks and the last", n)
	}
	s := m.summary(0, time.Now().Add(-time.Hour), time.Now())
	if s.Samples != int(n) || s.AvgSMClockMHz != 1980 {
		t.Fatalf("summary %+v, want %d samples at 1980 MHz", s, n)
	}
	if s := m.summary(5, time.Now(), time.Now()); s.Error == "" {
		t.Fatalf("a GPU never sampled: %+v, want an error saying so", s)
	}
	if !startClocks(context.Background(), nil, time.Millisecond).noSampler() {
		t.Fatal("a nil sampler is not reported as none")
	}
}
