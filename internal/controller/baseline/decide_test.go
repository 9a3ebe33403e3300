package baseline

import (
	"slices"
	"testing"
	"time"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	fleet "github.com/gpunode/gpunode/internal/baseline"
)

func TestObjectName(t *testing.T) {
	cases := []struct{ name, key, driver, want string }{
		{"a model's words and the driver version make the name", "h100 80gb hbm3", "580.95.05", "h100-80gb-hbm3-580.95.05"},
		{"characters a name cannot hold become dashes", "h200", "580_95+beta", "h200-580-95-beta"},
		{"a record without a driver version is named so", "h200", "", "h200-unknown-driver"},
		{"a model without a name is named so", "", "580.95.05", "unknown-model-580.95.05"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ObjectName(c.key, c.driver); got != c.want {
				t.Errorf("ObjectName(%q, %q) = %q, want %q", c.key, c.driver, got, c.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	then := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	now := then.Add(time.Hour)
	h200 := fleet.FleetBaseline{Model: "NVIDIA H200", Key: "h200", DriverVersion: "580.95.05", Nodes: 3,
		Metrics: []fleet.FleetMetric{{Metric: fleet.HBMCopy, Unit: "GB/s", Median: 4300, MAD: 10, Samples: 3}}}
	moved := h200
	moved.Metrics = []fleet.FleetMetric{{Metric: fleet.HBMCopy, Unit: "GB/s", Median: 4200, MAD: 10, Samples: 3}}
	stored := Object(h200, 3, then)
	stale := Object(fleet.FleetBaseline{Model: "NVIDIA H100", Key: "h100", DriverVersion: "570.1", Nodes: 1}, 3, then)
	cases := []struct {
		name      string
		computed  []fleet.FleetBaseline
		existing  []v1alpha1.PerformanceBaseline
		apply     []string
		appliedAt time.Time
		delete    []string
	}{
		{"a new model and driver is created, computed now", []fleet.FleetBaseline{h200}, nil, []string{"h200-580.95.05"}, now, nil},
		{"a baseline that agrees with the fleet is left alone, its time kept", []fleet.FleetBaseline{h200}, []v1alpha1.PerformanceBaseline{stored}, nil, time.Time{}, nil},
		{"a median that moved is written again, computed now", []fleet.FleetBaseline{moved}, []v1alpha1.PerformanceBaseline{stored}, []string{"h200-580.95.05"}, now, nil},
		{"a baseline whose fleet is gone is deleted", []fleet.FleetBaseline{h200}, []v1alpha1.PerformanceBaseline{stored, stale}, nil, time.Time{}, []string{"h100-570.1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Decide(c.computed, 3, c.existing, now)
			var applied []string
			for _, o := range p.Apply {
				applied = append(applied, o.Name)
				if !o.Status.ComputedAt.Time.Equal(c.appliedAt) {
					t.Errorf("%s computed at %v, want %v", o.Name, o.Status.ComputedAt, c.appliedAt)
				}
			}
			if !slices.Equal(applied, c.apply) || !slices.Equal(p.Delete, c.delete) {
				t.Errorf("apply %v, delete %v; want apply %v, delete %v", applied, p.Delete, c.apply, c.delete)
			}
		})
	}
}
