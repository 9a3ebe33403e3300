package deviceplugin

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/monitor"
)

func TestMonitorSourceTakesOnlyUnhealthyGPUsOutOfService(t *testing.T) {
	states := []monitor.GPUHealth{
		{Index: 0, UUID: "g0", State: health.State{Health: health.Healthy}},
		{Index: 1, UUID: "g1", State: health.State{Health: health.Degraded}},
		{Index: 2, UUID: "g2", State: health.State{Health: health.Unhealthy}},
	}
	s := NewMonitorSource(func() []monitor.GPUHealth { return states })
	want := map[string]bool{"g0": true, "g1": true, "g2": false}
	if got := s.Health(); !maps.Equal(got, want) {
		t.Errorf("Health() = %v, want %v", got, want)
	}
	s.Notify()
	s.Notify() // merged with the first, never blocks
	select {
	case <-s.Changed():
	case <-time.After(waitBound):
		t.Fatalf("Changed() received nothing after Notify")
	}
	select {
	case <-s.Changed():
		t.Errorf("Changed() received twice for two merged Notify calls")
	default:
	}
}

func TestNewAllRefusesAnIncompleteConfig(t *testing.T) {
	backend, err := sim.Load("h100x8")
	if err != nil {
		t.Fatalf("sim h100x8: %v", err)
	}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"a config without a backend is refused", Config{Health: newFakeHealth()}, "no GPU backend"},
		{"a config without a health source is refused", Config{Backend: backend}, "no health source"},
		{"an unknown strategy is refused by name", Config{Backend: backend, Health: newFakeHealth(), Strategy: "cdi-magic"}, `unknown strategy "cdi-magic"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := NewAll(t.Context(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("NewAll error %v, want one containing %q", err, c.want)
			}
		})
	}
}
