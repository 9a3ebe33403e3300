package remediation

import (
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// BenchmarkFaultToDeviceTaintRule measures, through a real manager against the test API
// server, the time from an agent publishing a GPU unhealthy to its DeviceTaintRule being
// readable, and reports its p50 and p99 (each iteration then heals the GPU and waits for
// the rule to go).
func BenchmarkFaultToDeviceTaintRule(b *testing.B) {
	h := newHarness(b, "rem-dtr-bench", 2, v1alpha1.RemediationPolicy{})
	h.publish(DriverGPUNode, 2)
	runManager(b)
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		setHealth(b, h, v1alpha1.HealthUnhealthy, "reset-gpu", "xid-48")
		for len(h.rules()) == 0 {
			time.Sleep(time.Millisecond)
		}
		took = append(took, time.Since(start))
		b.StopTimer()
		setHealth(b, h, v1alpha1.HealthHealthy, "none")
		for len(h.rules()) != 0 || h.held() {
			time.Sleep(5 * time.Millisecond)
		}
		b.StartTimer()
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[(len(took)*99)/100].Microseconds())/1000, "p99-ms")
}

// setHealth sets GPU 0's health as the agent would, again when the controller's write
// came first.
func setHealth(b *testing.B, h *harness, health v1alpha1.Health, action v1alpha1.Action, causes ...string) {
	b.Helper()
	for {
		gn := h.get()
		g := &gn.Status.GPUHealth[0]
		g.Health, g.Action, g.Causes, g.Since = health, action, causes, metav1.Now()
		err := h.c.Status().Update(b.Context(), gn)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			b.Fatal(err)
		}
	}
}
