package baseline

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadOverridesBuiltIn(t *testing.T) {
	tab, err := Load("testdata/h200-measured.yaml", BuiltIn())
	if err != nil {
		t.Fatal(err)
	}
	gen5 := Link{Gen: 5, Width: 16}
	cases := []struct {
		name   string
		model  string
		metric Metric
		want   float64
		origin string
	}{
		{"a value the file sets replaces the built-in one", "NVIDIA H200", HBMCopy, 4300, "testdata/h200-measured.yaml"},
		{"a value the file leaves out keeps the built-in one", "NVIDIA H200", FP64, 34 * ComputeFraction, "testdata/h200-measured.yaml"},
		{"PCIe is still derived from the link when the file sets none", "NVIDIA H200", PCIeD2H, 63.008 * PCIeFraction, "testdata/h200-measured.yaml"},
		{"a model the built-in table lacks is added", "NVIDIA L40S", FP32, 82, "testdata/h200-measured.yaml"},
		{"models the file does not name are untouched", "NVIDIA B200", HBMCopy, 6800, "built-in"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, ok := tab.Lookup(c.model, gen5)
			if !ok {
				t.Fatalf("%q not found", c.model)
			}
			if got := e.Values[c.metric]; math.Abs(got-c.want) > 1e-9 {
				t.Errorf("%s = %g, want %g", c.metric, got, c.want)
			}
			if e.Origin != c.origin {
				t.Errorf("origin %q, want %q", e.Origin, c.origin)
			}
		})
	}
	if e, _ := BuiltIn().Lookup("NVIDIA H200", gen5); e.Values[HBMCopy] != 4080 {
		t.Errorf("loading a file changed the built-in table: H200 HBM %g", e.Values[HBMCopy])
	}
}

func TestParseErrors(t *testing.T) {
	head := "apiVersion: gpunode.dev/v1alpha1\nkind: PerformanceBaseline\n"
	cases := []struct {
		name string
		yaml string
		line int
		want string
	}{
		{"an empty file is refused", "", 0, "file is empty"},
		{"a wrong kind is refused on line 1", "apiVersion: gpunode.dev/v1alpha1\nkind: AcceptancePolicy\nmodels: []\n", 1, "want gpunode.dev/v1alpha1 PerformanceBaseline"},
		{"a file without models is refused at the key", head + "models: []\n", 3, "lists no model"},
		{"an unknown field names its line", head + "models:\n  - model: X\n    hbmGBps: 3\n", 5, `unknown field "hbmGBps"`},
		{"a negative value names its model's line", head + "models:\n  - model: A\n    fp32TFLOPs: 1\n  - model: B\n    fp32TFLOPs: -2\n", 6, "fp32: must be a positive number of TFLOP/s"},
		{"a zero value is refused too", head + "models:\n  - model: A\n    pcieH2DGBps: 0\n", 4, "pcie-h2d: must be a positive"},
		{"a model without a name is refused", head + "models:\n  - hbmCopyGBps: 5\n", 4, "model: must name the model"},
		{"a name of punctuation cannot match any GPU", head + "models:\n  - model: A\n    names: ['--']\n", 4, "has no letters or digits"},
		{"a value of the wrong type names its line", head + "models:\n  - model: A\n    fp64TFLOPs: fast\n", 5, "cannot unmarshal"},
		{"broken YAML names its line", head + "models:\n  - model: [\n", 4, "did not find"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("b.yaml", []byte(c.yaml), BuiltIn())
			var fe *FileError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalidFile) {
				t.Fatalf("error %v is not a *FileError wrapping ErrInvalidFile", err)
			}
			if fe.File != "b.yaml" || fe.Line != c.line || !strings.Contains(fe.Problem, c.want) {
				t.Errorf("got %q (line %d), want line %d containing %q", err, fe.Line, c.line, c.want)
			}
		})
	}
}

func TestLoadMissingFileNamesIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.yaml")
	_, err := Load(path, BuiltIn())
	if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), path) {
		t.Errorf("Load(absent) = %v", err)
	}
	if _, statErr := os.Stat(path); statErr == nil {
		t.Fatal("the file exists")
	}
}

func TestExampleBaselineFilesLoad(t *testing.T) {
	files, err := filepath.Glob("../../examples/baselines/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example baseline files found (%v)", err)
	}
	for _, f := range files {
		if _, err := Load(f, BuiltIn()); err != nil {
			t.Errorf("example %s: %v", f, err)
		}
	}
}
