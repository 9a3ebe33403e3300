package baseline

import (
	"math"
	"testing"
)

func TestNormalize(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"the vendor prefix and dashes are dropped", "NVIDIA A100-SXM4-80GB", "a100 sxm4 80gb"},
		{"case and underscores do not matter", "a100_SXM4_80gb", "a100 sxm4 80gb"},
		{"repeated separators collapse to one space", "NVIDIA  H100 -- PCIe", "h100 pcie"},
		{"the old Tesla prefix is dropped too", "Tesla V100-SXM2-32GB", "v100 sxm2 32gb"},
		{"a name of punctuation only normalizes to nothing", "--", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Normalize(c.in); got != c.want {
				t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestPCIeTheoretical(t *testing.T) {
	cases := []struct {
		name string
		link Link
		want float64
	}{
		{"gen5 x16 carries 63 GB/s per direction after 128b/130b coding", Link{5, 16}, 63.008},
		{"gen4 x16 carries half of gen5", Link{4, 16}, 31.504},
		{"gen4 x8 carries half of gen4 x16", Link{4, 8}, 15.752},
		{"an unknown generation has no theoretical bandwidth", Link{9, 16}, 0},
		{"a link without lanes has none either", Link{5, 0}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := PCIeTheoretical(c.link); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("PCIeTheoretical(%+v) = %g, want %g", c.link, got, c.want)
			}
		})
	}
}

func TestBuiltInLookup(t *testing.T) {
	bi := BuiltIn()
	gen5 := Link{Gen: 5, Width: 16}
	cases := []struct {
		name   string
		model  string
		link   Link
		metric Metric
		want   float64
		found  bool
	}{
		{"the H200 expects 85% of its 4.8 TB/s HBM peak", "NVIDIA H200", gen5, HBMCopy, 4080, true},
		{"the H200 expects 90% of its 67 TFLOP/s FP32 peak", "NVIDIA H200", gen5, FP32, 60.3, true},
		{"the H200 expects 80% of a gen5 x16 link host-to-device", "NVIDIA H200", gen5, PCIeH2D, 50.4064, true},
		{"the H100 SXM is found by the name its driver reports", "NVIDIA H100 80GB HBM3", gen5, HBMCopy, 2847.5, true},
		{"the H100 NVL is a row of its own", "NVIDIA H100 NVL", gen5, FP64, 27, true},
		{"the A100 PCIe 80GB is found by its driver name", "NVIDIA A100 80GB PCIe", Link{4, 16}, HBMCopy, 1644.75, true},
		{"the A100 SXM4 40GB keeps its FP64 figure", "NVIDIA A100-SXM4-40GB", Link{4, 16}, FP64, 8.73, true},
		{"the A100 on a gen4 link expects 80% of 31.5 GB/s device-to-host", "NVIDIA A100-SXM4-80GB", Link{4, 16}, PCIeD2H, 25.2032, true},
		{"the B200 expects 85% of 8 TB/s", "NVIDIA B200", gen5, HBMCopy, 6800, true},
		{"an unknown model is not found", "NVIDIA GeForce RTX 4090", gen5, HBMCopy, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, ok := bi.Lookup(c.model, c.link)
			if ok != c.found {
				t.Fatalf("Lookup(%q) found = %v, want %v", c.model, ok, c.found)
			}
			if got := e.Values[c.metric]; math.Abs(got-c.want) > 1e-6 {
				t.Errorf("Lookup(%q)[%s] = %g, want %g", c.model, c.metric, got, c.want)
			}
		})
	}
}

func TestBuiltInRowsAreValidAndDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, r := range builtinRows {
		if r.Model == "" || len(r.Names) == 0 {
			t.Errorf("row %q needs a model and at least one driver name", r.Model)
		}
		if r.HBMPeakGBps == 0 || r.FP32PeakTFLOPs == 0 || r.FP64PeakTFLOPs == 0 || r.Reference == "" {
			t.Errorf("row %q lacks a datasheet value or its reference", r.Model)
		}
		for _, n := range r.Names {
			if other, dup := seen[Normalize(n)]; dup {
				t.Errorf("driver name %q is claimed by %q and %q", n, other, r.Model)
			}
			seen[Normalize(n)] = r.Model
		}
	}
}

func TestSimPresetModelsHaveABaseline(t *testing.T) {
	// The names the sim presets report (internal/gpu/sim/presets.go).
	for _, model := range []string{"NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA B200"} {
		e, ok := BuiltIn().Lookup(model, Link{Gen: 5, Width: 16})
		if !ok {
			t.Errorf("no built-in baseline for sim model %q", model)
			continue
		}
		for _, m := range Metrics {
			if e.Values[m] <= 0 {
				t.Errorf("%q: no %s baseline", model, m)
			}
		}
	}
}

func TestMetricUnits(t *testing.T) {
	for _, m := range Metrics {
		want := "GB/s"
		if m == FP32 || m == FP64 {
			want = "TFLOP/s"
		}
		if m.Unit() != want || m.Title() == string(m) {
			t.Errorf("%s: unit %q title %q", m, m.Unit(), m.Title())
		}
	}
}
