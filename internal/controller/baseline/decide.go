// Package baseline is the baseline controller: it keeps one PerformanceBaseline per GPU
// model and driver version, the fleet's medians from the AcceptanceRecords
// (internal/baseline.FleetBaselines), written with server-side apply as gpunode-baseline.
package baseline

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	fleet "github.com/gpunode/gpunode/internal/baseline"
)

// Plan is what one pass writes: the PerformanceBaselines to apply (spec and status), and
// the names of those to delete (no accepted node of their model and driver is left).
type Plan struct {
	Apply  []v1alpha1.PerformanceBaseline
	Delete []string
}

// ObjectName is the PerformanceBaseline's name for a normalized model and a driver version:
// "h200-580.95.05" (spaces and other characters a name cannot hold become dashes).
func ObjectName(modelKey, driver string) string {
	name := sanitize(modelKey)
	if name == "" {
		name = "unknown-model"
	}
	d := sanitize(driver)
	if d == "" {
		d = "unknown-driver"
	}
	return name + "-" + d
}

func sanitize(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}

// Decide is the pass's plan from the fleet baselines computed and the PerformanceBaselines
// that exist: an object whose spec or status differs from the computed one is applied
// (computedAt now), one that agrees is left alone (its computedAt kept), and one the fleet
// no longer has is deleted.
func Decide(computed []fleet.FleetBaseline, minSamples int, existing []v1alpha1.PerformanceBaseline, now time.Time) Plan {
	have := make(map[string]*v1alpha1.PerformanceBaseline, len(existing))
	for i := range existing {
		have[existing[i].Name] = &existing[i]
	}
	var p Plan
	want := map[string]bool{}
	for _, b := range computed {
		obj := Object(b, minSamples, now)
		if want[obj.Name] {
			continue // two drivers whose versions differ only in characters a name cannot hold: the first wins
		}
		want[obj.Name] = true
		if old, ok := have[obj.Name]; ok && same(old, &obj) {
			continue
		}
		p.Apply = append(p.Apply, obj)
	}
	for _, e := range existing {
		if !want[e.Name] {
			p.Delete = append(p.Delete, e.Name)
		}
	}
	slices.Sort(p.Delete)
	return p
}

// Object is the PerformanceBaseline of one fleet baseline, computed at now.
func Object(b fleet.FleetBaseline, minSamples int, now time.Time) v1alpha1.PerformanceBaseline {
	obj := v1alpha1.PerformanceBaseline{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PerformanceBaseline"},
		ObjectMeta: metav1.ObjectMeta{Name: ObjectName(b.Key, b.DriverVersion),
			Labels: map[string]string{v1alpha1.LabelBaselineModel: labelValue(b.Key)}},
		Spec: v1alpha1.PerformanceBaselineSpec{Model: b.Model, DriverVersion: b.DriverVersion},
		Status: v1alpha1.PerformanceBaselineStatus{Nodes: int32(b.Nodes), MinSamples: int32(max(minSamples, 1)),
			ComputedAt: metav1.NewTime(now.UTC().Truncate(time.Second))},
	}
	for _, m := range b.Metrics {
		obj.Status.Metrics = append(obj.Status.Metrics, v1alpha1.BaselineMetric{
			Name: string(m.Metric), Unit: m.Unit, Median: m.Median, MAD: m.MAD, Samples: int32(m.Samples)})
	}
	return obj
}

// labelValue is the normalized model as a label value: at most 63 characters, dashes for
// spaces.
func labelValue(key string) string {
	v := sanitize(key)
	if len(v) > 63 {
		v = strings.Trim(v[:63], "-.")
	}
	return v
}

// same says whether the stored object already holds what the fleet computed (computedAt
// aside).
func same(old, now *v1alpha1.PerformanceBaseline) bool {
	return old.Spec == now.Spec && old.Labels[v1alpha1.LabelBaselineModel] == now.Labels[v1alpha1.LabelBaselineModel] &&
		old.Status.Nodes == now.Status.Nodes && old.Status.MinSamples == now.Status.MinSamples &&
		slices.Equal(old.Status.Metrics, now.Status.Metrics) && !old.Status.ComputedAt.IsZero()
}
