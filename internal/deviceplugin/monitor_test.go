package deviceplugin

import (
	"context"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/monitor"
)

// The whole path: a simulated GPU falls off the bus, the health monitor turns the event into
// an unhealthy GPU, and the kubelet sees that device Unhealthy on ListAndWatch; it comes back
// only after a recovery and a passing check.
func TestAFaultSeenByTheMonitorTakesOnlyThatGPUOutOfServiceUntilItIsRecovered(t *testing.T) {
	backend, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	var src *MonitorSource
	mon, err := monitor.New(monitor.Config{Backend: backend, Interval: time.Hour,
		OnFinding: func(health.Finding, bool) { src.Notify() }})
	if err != nil {
		t.Fatal(err)
	}
	src = NewMonitorSource(mon.Health)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mon.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("monitor: %v", err)
		}
	})
	for !mon.Stats().EventsWatched {
		time.Sleep(time.Millisecond)
	}

	h := startPluginWith(t, StrategyEnvvar, backend, src)
	s, err := h.client.ListAndWatch(t.Context(), &pluginapi.Empty{})
	if err != nil {
		t.Fatalf("ListAndWatch: %v", err)
	}
	first, _ := recv(t, s)
	checkList(t, h, first, "")

	faulty := h.devices[3].UUID
	start := time.Now()
	if err := backend.Inject(sim.Fault{GPU: 3, Type: sim.FaultXID, XID: 79}); err != nil {
		t.Fatal(err)
	}
	for {
		got, _ := recv(t, s)
		if unhealthyOf(got) == faulty {
			checkList(t, h, got, faulty)
			break
		}
	}
	t.Logf("XID 79 injected -> GPU Unhealthy on ListAndWatch: %v (target: 1 s)", time.Since(start))

	// A passing check alone does not bring it back; a reboot followed by one does.
	if err := mon.Apply(faulty, health.CheckPassed{}); err != nil {
		t.Fatal(err)
	}
	src.Notify()
	if src.Health()[faulty] {
		t.Fatal("a passing check alone re-admitted the GPU")
	}
	for _, in := range []health.Input{health.Recovered{Kind: health.RecoveryNodeReboot}, health.CheckPassed{}} {
		if err := mon.Apply(faulty, in); err != nil {
			t.Fatal(err)
		}
	}
	src.Notify()
	got, _ := recv(t, s)
	checkList(t, h, got, "")
}

// unhealthyOf returns the one Unhealthy device ID of a list ("" when none).
func unhealthyOf(devs []*pluginapi.Device) string {
	for _, d := range devs {
		if d.Health == pluginapi.Unhealthy {
			return d.ID
		}
	}
	return ""
}
