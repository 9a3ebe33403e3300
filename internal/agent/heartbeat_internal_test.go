package agent

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/simhost"
)

func TestTheHeartbeatComesEveryIntervalButNoMoreOftenThanEveryThirtySeconds(t *testing.T) {
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                string
		interval, heartbeat time.Duration
		want                time.Duration
	}{
		{"the default 30 s interval beats every 30 s", 30 * time.Second, 0, 30 * time.Second},
		{"a one-minute interval beats every minute", time.Minute, 0, time.Minute},
		{"a 500 ms interval beats every 30 s", 500 * time.Millisecond, 0, 30 * time.Second},
		{"a heartbeat set explicitly is taken as is", 500 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(Config{NodeName: "n", Client: fake.NewClientBuilder().Build(), Backend: b,
				Host:     func(devs []gpu.Device) (*host.Reader, error) { return simhost.Reader(devs, nil) },
				Interval: tt.interval, Heartbeat: tt.heartbeat})
			if err != nil {
				t.Fatal(err)
			}
			if a.cfg.Heartbeat != tt.want {
				t.Errorf("heartbeat every %s, want %s", a.cfg.Heartbeat, tt.want)
			}
		})
	}
}
