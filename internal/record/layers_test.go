package record

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/baseline"
	"github.com/gpunode/gpunode/internal/frameworks"
)

// layersInput runs layers L4 and L5 on a simulated H200 node: every metric at hbm × its
// baseline for HBM and at its baseline otherwise, and a one-GPU frameworks report.
func layersInput(t *testing.T, hbm float64) Input {
	t.Helper()
	in := simulatedInput(t, "h200x1")
	f := in.Facts
	perf := &accept.Performance{Baselines: baseline.BuiltIn()}
	for _, d := range f.GPU.Devices {
		e, _ := perf.Baselines.Lookup(d.Name, baseline.Link{Gen: d.PCI.LinkGenMax, Width: d.PCI.LinkWidthMax})
		g := accept.GPUPerformance{Index: d.Index, Values: map[baseline.Metric]float64{}}
		for m, v := range e.Values {
			g.Values[m] = v
		}
		g.Values[baseline.HBMCopy] *= hbm
		perf.GPUs = append(perf.GPUs, g)
	}
	f.Performance = perf
	f.Frameworks = &frameworks.Report{Schema: frameworks.Schema, Python: "3.12.3", Torch: "2.11.0", CUDA: "13.0", GPUs: []string{"NVIDIA H200"}, Seconds: 7.25,
		Tests: []frameworks.Test{
			{Name: "allocate", Status: "pass", Message: "1 GiB allocated", Seconds: 0.4},
			{Name: "matmul", Status: "pass", Message: "2048x2048 float32 matmul matches", Seconds: 1.1},
			{Name: "all-reduce", Status: "skip", Message: "one GPU: an all-reduce across local GPUs needs at least two"},
			{Name: "checkpoint", Status: "pass", Message: "saved and restored bit for bit", Seconds: 0.3},
		}}
	return runInput(t, f, func(p *accept.Policy) { p.Layers = []accept.Layer{accept.LayerPerformance, accept.LayerFrameworks} })
}

func TestRecordCarriesMeasurementsAndFrameworks(t *testing.T) {
	cases := []struct {
		name     string
		hbm      float64
		result   string
		markdown []string
		nccl     string
	}{
		{"a GPU at its baselines passes and shows each ratio", 1, ResultPassed,
			[]string{"## Performance against baseline", "| 0 | hbm-copy | 4080.0 | 4080.0 | GB/s | 100.0% | 90% | PASS | H200 SXM 141GB (built-in",
				"## Frameworks", "| all-reduce | SKIP | 0.00 | one GPU", "torch 2.11.0"},
			"NCCL all-reduce (L5): one GPU"},
		{"a GPU at 70% of its HBM baseline fails and the record shows the ratio", 0.7, ResultFailed,
			[]string{"| 0 | hbm-copy | 2856.0 | 4080.0 | GB/s | 70.0% | 90% | FAIL |", "### FAIL `performance.hbm-copy`"},
			"hbm-copy fail (lowest 70% of baseline)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Build(layersInput(t, c.hbm))
			if r.Result != c.result {
				t.Errorf("result %s, want %s", r.Result, c.result)
			}
			data, err := JSON(r)
			if err != nil {
				t.Fatal(err)
			}
			var back Record
			if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(&back, r) {
				t.Fatalf("JSON round trip: %v", err)
			}
			for _, want := range []string{`"measured": `, `"baseline": 4080`, `"ratio": `, `"unit": "GB/s"`, `"frameworks": {`, `"torch": "2.11.0"`} {
				if !bytes.Contains(data, []byte(want)) {
					t.Errorf("JSON lacks %s", want)
				}
			}
			var md bytes.Buffer
			if err := Markdown(&md, r, ""); err != nil {
				t.Fatal(err)
			}
			for _, want := range c.markdown {
				if !strings.Contains(md.String(), want) {
					t.Errorf("Markdown lacks %q:\n%s", want, md.String())
				}
			}
			if !strings.Contains(r.Template.NCCLRDMAStorageBaseline.Value, c.nccl) {
				t.Errorf("NCCL field %+v lacks %q", r.Template.NCCLRDMAStorageBaseline, c.nccl)
			}
			if !strings.HasPrefix(r.Template.RepresentativeTraining.Value, "PyTorch smoke test (L5)") {
				t.Errorf("training field %+v", r.Template.RepresentativeTraining)
			}
		})
	}
}

func TestRecordWithoutLayersL4L5SaysHowToRunThem(t *testing.T) {
	r := Build(simulatedInput(t, "h100x8"))
	if r.Frameworks != nil {
		t.Error("a record without L5 carries a frameworks report")
	}
	if !strings.Contains(r.Template.RepresentativeTraining.NotApplicable, "--layers performance,frameworks") {
		t.Errorf("training field %+v", r.Template.RepresentativeTraining)
	}
}
