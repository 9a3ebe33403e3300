package health_test

import (
	"fmt"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/rules"
)

// The monitor's loop in miniature: a poll shows a pending row remap, the GPU is reset, the
// checks pass.
func Example() {
	t0 := time.Date(2025, 5, 18, 19, 0, 0, 0, time.UTC)
	dev := gpu.Device{Index: 0, UUID: "GPU-0", RecoveryAction: gpu.RecoveryNone}
	prev := &gpu.Snapshot{Time: t0, Devices: []gpu.Device{dev}}
	dev.RowRemap.Pending = true
	cur := &gpu.Snapshot{Time: t0.Add(10 * time.Second), Devices: []gpu.Device{dev}}

	agg := health.NewAggregator(0)
	s := health.NewState(t0)
	for _, f := range health.FromSnapshot(prev, cur, rules.DefaultThresholds()) {
		agg.Add(f)
		s = health.Next(s, f, cur.Time)
		fmt.Println(f)
	}
	fmt.Println(s.Health, s.Action, s.Causes)

	s = health.Next(s, health.CheckPassed{}, t0.Add(time.Minute))
	fmt.Println("check without a reset:", s.Health)
	s = health.Next(s, health.Recovered{Kind: health.RecoveryGPUReset}, t0.Add(2*time.Minute))
	fmt.Println("after the reset:", s.Health, "awaiting check:", s.AwaitingCheck)
	s = health.Next(s, health.CheckPassed{}, t0.Add(3*time.Minute))
	fmt.Println("after the check:", s.Health, "forgot", agg.Clear("GPU-0"), "finding")
	// Output:
	// GPU 0 (GPU-0): row-remap-pending memory/critical, action reset-gpu: row remap pending: GPU reset required (x1)
	// unhealthy reset-gpu [row-remap-pending]
	// check without a reset: unhealthy
	// after the reset: unhealthy awaiting check: true
	// after the check: healthy forgot 1 finding
}
