package baseline

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

func start(t *testing.T) client.Client {
	t.Helper()
	cfg, c := testenv.Start(t)
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: mgr.GetClient(), Reader: mgr.GetCache(), Records: mgr.GetAPIReader(), Clock: clock.RealClock{}, MinSamples: 2}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the manager stopped with an error: %v", err)
		}
	})
	return c
}

// record is a valid AcceptanceRecord of node, finished at minute, measuring hbm on every
// GPU of an H200 node on driver 580.95.05.
func record(node string, minute int, result v1alpha1.AcceptanceResult, hbm float64) *v1alpha1.AcceptanceRecord {
	at := metav1.NewTime(time.Date(2026, 11, 1, 12, minute, 0, 0, time.UTC))
	r := &v1alpha1.AcceptanceRecord{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%02d", node, minute), Labels: map[string]string{v1alpha1.LabelNode: node}},
		Spec: v1alpha1.AcceptanceRecordSpec{
			Node: node, Result: result, StartedAt: at, FinishedAt: at, Backend: "sim", Layers: []v1alpha1.Layer{"performance"},
			Policy: v1alpha1.PolicyRef{Name: "default", SHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
			Stack:  v1alpha1.RecordStack{DriverVersion: "580.95.05", CUDAVersion: "13.0"},
			Performance: []v1alpha1.ModelPerformance{{Model: "NVIDIA H200", Metrics: []v1alpha1.MetricValue{
				{Name: "hbm-copy", Value: hbm, Lowest: hbm, Unit: "GB/s", GPUs: 8},
				{Name: "fp32", Value: 65, Lowest: 64.8, Unit: "TFLOP/s", GPUs: 8},
			}}},
		},
	}
	if result == v1alpha1.AcceptanceFailed {
		r.Spec.Summary.Fail = 1
	}
	na := v1alpha1.TemplateField{NotApplicable: "not measured"}
	r.Spec.Template = v1alpha1.Template{Node: v1alpha1.TemplateField{Value: node}, HardwareSKUSerial: na, Firmware: na, OSKernel: na,
		ContainerdKubelet: na, DriverCUDA: na, OperatorDevicePlugin: na, NICRDMA: na, GPUCountHealth: na, PCIeNVLinkNVSwitch: na,
		DCGMDiagnostics: na, NCCLRDMAStorageBaseline: na, RepresentativeTraining: na, RepresentativeInference: na, ResultEvidenceURI: na}
	return r
}

// waitFor waits until the PerformanceBaseline name satisfies ok (or, with ok nil, is gone),
// for as long as a loaded machine needs.
func waitFor(t *testing.T, c client.Client, name, want string, ok func(*v1alpha1.PerformanceBaseline) bool) *v1alpha1.PerformanceBaseline {
	t.Helper()
	var got v1alpha1.PerformanceBaseline
	gone := false
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: name}, &got)
		if err != nil {
			gone = client.IgnoreNotFound(err) == nil
			return ok == nil && gone, client.IgnoreNotFound(err)
		}
		return ok != nil && ok(&got), nil
	})
	if err != nil {
		t.Fatalf("PerformanceBaseline %s (gone: %v): status %+v; want %s", name, gone, got.Status, want)
	}
	return &got
}

func hbmMedian(b *v1alpha1.PerformanceBaseline) (float64, int32) {
	for _, m := range b.Status.Metrics {
		if m.Name == "hbm-copy" {
			return m.Median, m.Samples
		}
	}
	return 0, 0
}

func TestThePerformanceBaselineFollowsTheAcceptedNodesOfAModelAndDriver(t *testing.T) {
	c := start(t)
	ctx := t.Context()
	const name = "h200-580.95.05"
	create := func(r *v1alpha1.AcceptanceRecord) {
		t.Helper()
		if err := c.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	create(record("pb-a", 1, v1alpha1.AcceptancePassed, 4300))
	create(record("pb-b", 1, v1alpha1.AcceptancePassed, 4200))
	create(record("pb-c", 1, v1alpha1.AcceptancePassed, 4000))
	b := waitFor(t, c, name, "3 nodes, hbm-copy median 4200 of 3 samples", func(b *v1alpha1.PerformanceBaseline) bool {
		m, n := hbmMedian(b)
		return b.Status.Nodes == 3 && m == 4200 && n == 3
	})
	if b.Spec.Model != "NVIDIA H200" || b.Spec.DriverVersion != "580.95.05" || b.Labels[v1alpha1.LabelBaselineModel] != "h200" || b.Status.MinSamples != 2 {
		t.Errorf("spec %+v, labels %v, minSamples %d", b.Spec, b.Labels, b.Status.MinSamples)
	}
	for _, f := range b.ManagedFields {
		if f.Manager != v1alpha1.FieldManagerBaseline {
			t.Errorf("field manager %q writes the PerformanceBaseline, want %s alone", f.Manager, v1alpha1.FieldManagerBaseline)
		}
	}

	// pb-c's latest run fails: it no longer counts, and the median of the other two is 4250.
	create(record("pb-c", 2, v1alpha1.AcceptanceFailed, 1000))
	waitFor(t, c, name, "2 nodes, hbm-copy median 4250", func(b *v1alpha1.PerformanceBaseline) bool {
		m, n := hbmMedian(b)
		return b.Status.Nodes == 2 && m == 4250 && n == 2
	})

	// A baseline changed by hand is put back.
	b = waitFor(t, c, name, "present", func(*v1alpha1.PerformanceBaseline) bool { return true })
	b.Status.Metrics = nil
	if err := c.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, name, "its metrics put back", func(b *v1alpha1.PerformanceBaseline) bool {
		m, _ := hbmMedian(b)
		return m == 4250
	})

	// Records deleted: one accepted node is left, too few for a metric; then none, and the
	// baseline goes.
	for _, n := range []string{"pb-a-01", "pb-c-01", "pb-c-02"} {
		if err := c.Delete(ctx, &v1alpha1.AcceptanceRecord{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, c, name, "1 node, no metrics", func(b *v1alpha1.PerformanceBaseline) bool {
		return b.Status.Nodes == 1 && len(b.Status.Metrics) == 0
	})
	if err := c.Delete(ctx, &v1alpha1.AcceptanceRecord{ObjectMeta: metav1.ObjectMeta{Name: "pb-b-01"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, name, "deleted", nil)
}
