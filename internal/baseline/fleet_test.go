package baseline

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// rec is a record of node, finished minute minutes after t0, of one model on one driver,
// with metric values.
func rec(node string, minute int, result v1alpha1.AcceptanceResult, model, driver string, values map[string]float64) v1alpha1.AcceptanceRecord {
	mp := v1alpha1.ModelPerformance{Model: model}
	for _, m := range Metrics {
		if v, ok := values[string(m)]; ok {
			mp.Metrics = append(mp.Metrics, v1alpha1.MetricValue{Name: string(m), Value: v, Lowest: v, Unit: m.Unit(), GPUs: 8})
		}
	}
	end := metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute))
	return v1alpha1.AcceptanceRecord{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%03d", node, minute)},
		Spec: v1alpha1.AcceptanceRecordSpec{Node: node, Result: result, StartedAt: end, FinishedAt: end,
			Stack: v1alpha1.RecordStack{DriverVersion: driver}, Performance: []v1alpha1.ModelPerformance{mp}},
	}
}

func hbm(v float64) map[string]float64 { return map[string]float64{"hbm-copy": v} }

const h200, drv1, drv2 = "NVIDIA H200", "580.95.05", "590.10.01"

func TestFleetBaselines(t *testing.T) {
	pass, fail := v1alpha1.AcceptancePassed, v1alpha1.AcceptanceFailed
	cases := []struct {
		name       string
		records    []v1alpha1.AcceptanceRecord
		minSamples int
		want       []FleetBaseline
	}{
		{"three accepted nodes give their median and the median absolute deviation",
			[]v1alpha1.AcceptanceRecord{rec("a", 1, pass, h200, drv1, hbm(4300)), rec("b", 1, pass, h200, drv1, hbm(4200)), rec("c", 1, pass, h200, drv1, hbm(4000))}, 3,
			[]FleetBaseline{{Model: h200, Key: "h200", DriverVersion: drv1, Nodes: 3, Metrics: []FleetMetric{{HBMCopy, "GB/s", 4200, 100, 3}}}}},
		{"an even number of nodes gives the mean of the middle two",
			[]v1alpha1.AcceptanceRecord{rec("a", 1, pass, h200, drv1, hbm(10)), rec("b", 1, pass, h200, drv1, hbm(20)), rec("c", 1, pass, h200, drv1, hbm(40)), rec("d", 1, pass, h200, drv1, hbm(1000))}, 3,
			[]FleetBaseline{{Model: h200, Key: "h200", DriverVersion: drv1, Nodes: 4, Metrics: []FleetMetric{{HBMCopy, "GB/s", 30, 15, 4}}}}},
		{"one slow node does not move the median much",
			[]v1alpha1.AcceptanceRecord{rec("a", 1, pass, h200, drv1, hbm(4300)), rec("b", 1, pass, h200, drv1, hbm(4300)), rec("c", 1, pass, h200, drv1, hbm(100))}, 3,
			[]FleetBaseline{{Model: h200, Key: "h200", DriverVersion: drv1, Nodes: 3, Metrics: []FleetMetric{{HBMCopy, "GB/s", 4300, 0, 3}}}}},
		{"a node counts once, with its latest record",
			[]v1alpha1.AcceptanceRecord{rec("a", 1, pass, h200, drv1, hbm(1000)), rec("a", 2, pass, h200, drv1, hbm(4000)), rec("a", 3, pass, h200, drv1, hbm(4100))}, 1,
			[]FleetBaseline{{Model: h200, Key: "h200", DriverVersion: drv1, Nodes: 1, Metrics: []FleetMetric{{HBMCopy, "GB/s", 4100, 0, 1}}}}},
		{"a node whose latest record failed does not count, although an older one passed",
			[]v1alpha1.AcceptanceRecord{rec("a", 1, pass, h200, drv1, hbm(4300)), rec("a", 2, fail, h200, drv1, hbm(2000)), rec("b", 1, pass, h200, drv1, hbm(4100))}, 1,
			[]FleetBaseline{{Model: h200, Key: "h200", DriverVersion: drv1, Nodes: 1, Metrics: []FleetMetric{{HBMCopy, "GB/s", 4100, 0, 1}}}}},
		{"fewer nodes than the minimum give no metric, only the node count",
			[]v1alpha1.AcceptanceRecord{rec("a", 1, pass, h200, drv1, hbm(4300)), rec("b", 1, pass, h200, drv1, hbm(4200))}, 3,
			[]FleetBaseline{{Model: h200, Key: "h200", DriverVersion: drv1, Nodes: 2}}},
		{"driver versions are kept apart, and a node upgraded counts on each with its latest record there",
			[]v1alpha1.AcceptanceRecord{rec("a", 1, pass, h200, drv1, hbm(4300)), rec("a", 2, pass, h200, drv2, hbm(3400)), rec("b", 1, pass, h200, drv1, hbm(4100))}, 1,
			[]FleetBaseline{
				{Model: h200, Key: "h200", DriverVersion: drv1, Nodes: 2, Metrics: []FleetMetric{{HBMCopy, "GB/s", 4200, 100, 2}}},
				{Model: h200, Key: "h200", DriverVersion: drv2, Nodes: 1, Metrics: []FleetMetric{{HBMCopy, "GB/s", 3400, 0, 1}}}}},
		{"spellings of one model are one model, named by the first spelling in sort order",
			[]v1alpha1.AcceptanceRecord{rec("a", 1, pass, "NVIDIA H200", drv1, hbm(4300)), rec("b", 1, pass, "nvidia-h200", drv1, hbm(4100))}, 1,
			[]FleetBaseline{{Model: "NVIDIA H200", Key: "h200", DriverVersion: drv1, Nodes: 2, Metrics: []FleetMetric{{HBMCopy, "GB/s", 4200, 100, 2}}}}},
		{"metrics come in report order, each with its own sample count",
			[]v1alpha1.AcceptanceRecord{rec("a", 1, pass, h200, drv1, map[string]float64{"pcie-h2d": 55, "fp32": 65}), rec("b", 1, pass, h200, drv1, map[string]float64{"fp32": 64})}, 1,
			[]FleetBaseline{{Model: h200, Key: "h200", DriverVersion: drv1, Nodes: 2, Metrics: []FleetMetric{{FP32, "TFLOP/s", 64.5, 0.5, 2}, {PCIeH2D, "GB/s", 55, 0, 1}}}}},
		{"a zero value (nothing measured) is no sample",
			[]v1alpha1.AcceptanceRecord{rec("a", 1, pass, h200, drv1, hbm(0)), rec("b", 1, pass, h200, drv1, hbm(4100))}, 1,
			[]FleetBaseline{{Model: h200, Key: "h200", DriverVersion: drv1, Nodes: 2, Metrics: []FleetMetric{{HBMCopy, "GB/s", 4100, 0, 1}}}}},
		{"records without performance give no baseline",
			[]v1alpha1.AcceptanceRecord{{Spec: v1alpha1.AcceptanceRecordSpec{Node: "a", Result: pass}}}, 1, []FleetBaseline{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := FleetBaselines(c.records, c.minSamples)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	cases := []struct {
		name                  string
		measured, fleet, prev float64
		tolerance             float64
		outcome               Outcome
		belowFleet, belowPrev float64
		message               string
	}{
		{"a value within the tolerance of both references is within", 4200, 4300, 4250, 5, Within, 2.3256, 1.1765,
			"hbm-copy 4200.0 GB/s: 2.3% below the fleet baseline 4300.0 GB/s, 1.2% below the node's previous 4250.0 GB/s (tolerance 5%)"},
		{"a value more than the tolerance below the fleet baseline is below", 3440, 4300, 3450, 5, Below, 20, 0.2899,
			"hbm-copy 3440.0 GB/s: 20.0% below the fleet baseline 4300.0 GB/s, 0.3% below the node's previous 3450.0 GB/s (tolerance 5%)"},
		{"a value more than the tolerance below the node's own previous is below, even within the fleet's", 4100, 4300, 4400, 5, Below, 4.6512, 6.8182,
			"hbm-copy 4100.0 GB/s: 4.7% below the fleet baseline 4300.0 GB/s, 6.8% below the node's previous 4400.0 GB/s (tolerance 5%)"},
		{"a value exactly at the tolerance is within", 95, 100, 0, 5, Within, 5, 0,
			"hbm-copy 95.0 GB/s: 5.0% below the fleet baseline 100.0 GB/s (tolerance 5%)"},
		{"a value above the references is within, and says above", 110, 100, 100, 0, Within, -10, -10,
			"hbm-copy 110.0 GB/s: 10.0% above the fleet baseline 100.0 GB/s, 10.0% above the node's previous 100.0 GB/s (tolerance 0%)"},
		{"without a fleet baseline the previous value alone decides", 90, 0, 100, 5, Below, 0, 10,
			"hbm-copy 90.0 GB/s: 10.0% below the node's previous 100.0 GB/s (tolerance 5%)"},
		{"without either reference there is nothing to compare with", 90, 0, 0, 5, NoReference, 0, 0,
			"hbm-copy 90.0 GB/s: no fleet baseline and no previous value to compare with"},
		{"a zero measurement is below a reference", 0, 100, 0, 50, Below, 100, 0,
			"hbm-copy 0.0 GB/s: 100.0% below the fleet baseline 100.0 GB/s (tolerance 50%)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := Compare(HBMCopy, c.measured, c.fleet, c.prev, c.tolerance)
			if err != nil {
				t.Fatal(err)
			}
			if v.Outcome != c.outcome || math.Abs(v.BelowFleetPercent-c.belowFleet) > 1e-3 || math.Abs(v.BelowPreviousPercent-c.belowPrev) > 1e-3 {
				t.Errorf("got %s, %.4f%% below the fleet, %.4f%% below the previous; want %s, %.4f%%, %.4f%%",
					v.Outcome, v.BelowFleetPercent, v.BelowPreviousPercent, c.outcome, c.belowFleet, c.belowPrev)
			}
			if v.Message != c.message {
				t.Errorf("message %q\nwant    %q", v.Message, c.message)
			}
		})
	}
}

func TestCompareRefusesBadInputNamingIt(t *testing.T) {
	cases := []struct {
		name                             string
		measured, fleet, prev, tolerance float64
		want                             string
	}{
		{"a measured value that is not a number", math.NaN(), 1, 1, 5, "measured value NaN"},
		{"a negative measured value", -1, 1, 1, 5, "measured value -1"},
		{"an infinite fleet baseline", 1, math.Inf(1), 1, 5, "fleet baseline +Inf"},
		{"a negative previous value", 1, 1, -2, 5, "previous value -2"},
		{"a tolerance over 100%", 1, 1, 1, 101, "tolerance 101%"},
		{"a negative tolerance", 1, 1, 1, -1, "tolerance -1%"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compare(FP32, c.measured, c.fleet, c.prev, c.tolerance)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "metric fp32") {
				t.Errorf("error %v, want one naming metric fp32 and %q", err, c.want)
			}
		})
	}
}
