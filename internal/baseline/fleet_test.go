package baseline

import (
	"math"
	"testing"
)

func TestMedian(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name string
		in   []float64
		want float64
		ok   bool
	}{
		{"an odd count gives the middle value", []float64{3, 1, 2}, 2, true},
		{"an even count gives the mean of the two middle values", []float64{4, 1, 3, 2}, 2.5, true},
		{"one value is its own median", []float64{7}, 7, true},
		{"an outlier does not move the median", []float64{4300, 4290, 4310, 100}, 4295, true},
		{"NaN and infinite values are ignored", []float64{nan, 5, inf, 1, 3}, 3, true},
		{"no value gives no median", nil, 0, false},
		{"only NaN gives no median", []float64{nan}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := append([]float64(nil), c.in...)
			got, ok := Median(c.in)
			if ok != c.ok || got != c.want {
				t.Errorf("Median(%v) = %g, %v; want %g, %v", c.in, got, ok, c.want, c.ok)
			}
			for i := range before {
				if before[i] != c.in[i] && !(math.IsNaN(before[i]) && math.IsNaN(c.in[i])) {
					t.Errorf("Median reordered its input: %v", c.in)
				}
			}
		})
	}
}

func TestFleet(t *testing.T) {
	s := func(node, model string, hbm float64) Sample {
		return Sample{Node: node, Model: model, Values: map[Metric]float64{HBMCopy: hbm}}
	}
	samples := []Sample{
		// node a has 3 GPUs: it counts once, with its median 4300.
		s("a", "NVIDIA H200", 4300), s("a", "NVIDIA H200", 4300), s("a", "NVIDIA H200", 1000),
		s("b", "NVIDIA H200", 4200),
		s("c", "nvidia h200", 4250),
		s("d", "NVIDIA B200", 7000),
	}
	cases := []struct {
		name     string
		minNodes int
		model    string
		want     float64
		found    bool
		origin   string
	}{
		{"the fleet value is the median of the nodes' medians", 3, "NVIDIA H200", 4250, true, "fleet median of 3 nodes"},
		{"a model seen on too few nodes has no fleet baseline", 3, "NVIDIA B200", 0, false, ""},
		{"with a lower bar one node is enough", 1, "NVIDIA B200", 7000, true, "fleet median of 1 nodes"},
		{"a model never measured is not found", 1, "NVIDIA A100-SXM4-80GB", 0, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, ok := Fleet(samples, c.minNodes).Lookup(c.model, Link{})
			if ok != c.found || e.Values[HBMCopy] != c.want || e.Origin != c.origin {
				t.Errorf("Lookup(%q) = %+v, %v; want %g from %q, found %v", c.model, e, ok, c.want, c.origin, c.found)
			}
		})
	}
}

func TestChainPrefersTheFirstSourcePerMetric(t *testing.T) {
	fleet := Fleet([]Sample{{Node: "a", Model: "NVIDIA H200", Values: map[Metric]float64{HBMCopy: 4321}}}, 1)
	c := Chain{fleet, BuiltIn()}
	e, ok := c.Lookup("NVIDIA H200", Link{Gen: 5, Width: 16})
	if !ok {
		t.Fatal("H200 not found")
	}
	if e.Values[HBMCopy] != 4321 {
		t.Errorf("HBM %g: the fleet's value should win", e.Values[HBMCopy])
	}
	if math.Abs(e.Values[FP32]-60.3) > 1e-9 {
		t.Errorf("FP32 %g: the built-in value should fill what the fleet lacks", e.Values[FP32])
	}
	if c.Name() != "fleet > built-in" {
		t.Errorf("name %q", c.Name())
	}
	if _, ok := c.Lookup("NVIDIA T4", Link{}); ok {
		t.Error("a model no source knows was found")
	}
}
