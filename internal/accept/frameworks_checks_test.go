package accept

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/frameworks"
)

// healthyReport is what check_torch.py writes on an n-GPU node where everything works.
func healthyReport(n int) *frameworks.Report {
	r := &frameworks.Report{Schema: frameworks.Schema, Python: "3.12.3", Torch: "2.11.0", CUDA: "13.0", NCCL: "2.27.7", Seconds: 9.5}
	for range n {
		r.GPUs = append(r.GPUs, "NVIDIA H100 80GB HBM3")
	}
	for _, name := range frameworks.Tests {
		t := frameworks.Test{Name: name, Status: frameworks.StatusPass, Message: name + " ok on every GPU", Seconds: 1}
		for i := range n {
			t.GPUs = append(t.GPUs, frameworks.GPUTest{Index: i, Status: frameworks.StatusPass, Message: "ok"})
		}
		r.Tests = append(r.Tests, t)
	}
	return r
}

func TestFrameworksChecks(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(f *Facts)
		check   string
		want    Status
		message string
	}{
		{"a healthy report passes with the versions", func(*Facts) {}, "frameworks.pytorch", StatusPass, "torch 2.11.0 (CUDA 13.0, NCCL 2.27.7) on Python 3.12.3 sees 8 GPUs"},
		{"a passing test passes with its message", func(*Facts) {}, "frameworks.checkpoint", StatusPass, "checkpoint ok on every GPU"},
		{"a failed matmul fails with the script's words", func(f *Facts) {
			m := f.Frameworks.Find(frameworks.TestMatmul)
			m.Status, m.Message = frameworks.StatusFail, "GPU 5: 17 of 4194304 elements beyond the float32 rounding bound"
			m.GPUs[5].Status = frameworks.StatusFail
		}, "frameworks.matmul", StatusFail, "GPU 5: 17 of 4194304 elements"},
		{"a one-GPU all-reduce skip stays a skip with its reason", func(f *Facts) {
			a := f.Frameworks.Find(frameworks.TestAllReduce)
			a.Status, a.Message, a.GPUs = frameworks.StatusSkip, "one GPU: an all-reduce across local GPUs needs at least two", nil
		}, "frameworks.all-reduce", StatusSkip, "one GPU"},
		{"torch seeing fewer GPUs than the driver fails", func(f *Facts) { f.Frameworks.GPUs = f.Frameworks.GPUs[:7] },
			"frameworks.pytorch", StatusFail, "sees 7 of the 8 GPUs"},
		{"missing python3 skips the layer with the reason", func(f *Facts) {
			f.Frameworks, f.FrameworksErr = nil, fmt.Errorf("%w: python3: executable file not found in $PATH", frameworks.ErrNoPython)
		}, "frameworks.pytorch", StatusSkip, "python3 not found"},
		{"missing torch skips every test with the reason", func(f *Facts) {
			f.Frameworks, f.FrameworksErr = nil, fmt.Errorf("%w: No module named 'torch'", frameworks.ErrNoTorch)
		}, "frameworks.matmul", StatusSkip, "No module named 'torch'"},
		{"a script that timed out fails the pytorch check", func(f *Facts) {
			f.Frameworks, f.FrameworksErr = nil, fmt.Errorf("python3 check_torch.py: stopped after 5m0s: %w", context.DeadlineExceeded)
		}, "frameworks.pytorch", StatusFail, "did not report: python3 check_torch.py: stopped after 5m0s"},
		{"the tests of a script that broke skip pointing at the pytorch check", func(f *Facts) {
			f.Frameworks, f.FrameworksErr = nil, fmt.Errorf("report is not valid JSON")
		}, "frameworks.allocate", StatusSkip, "see frameworks.pytorch"},
		{"a report without a test fails that test", func(f *Facts) { f.Frameworks.Tests = f.Frameworks.Tests[:2] },
			"frameworks.checkpoint", StatusFail, `reported no "checkpoint" test`},
		{"a run without the layer's report skips saying so", func(f *Facts) { f.Frameworks = nil },
			"frameworks.allocate", StatusSkip, "gathered no frameworks report"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := healthyFacts(t)
			f.Frameworks = healthyReport(len(f.GPU.Devices))
			c.mutate(f)
			p := DefaultPolicy()
			p.Layers = []Layer{LayerFrameworks}
			rep, err := Run(context.Background(), f, &p, time.Now, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 1+len(frameworks.Tests) {
				t.Fatalf("%d frameworks checks ran", len(rep.Results))
			}
			for _, r := range rep.Results {
				if r.ID != c.check {
					continue
				}
				if r.Status != c.want || !strings.Contains(r.Message, c.message) {
					t.Fatalf("%s = %s %q, want %s containing %q", r.ID, r.Status, r.Message, c.want, c.message)
				}
				if r.Status == StatusFail && r.Fix == "" {
					t.Error("a failing check without a fix")
				}
				for _, g := range r.GPUs {
					if g.UUID != f.GPU.Devices[g.Index].UUID {
						t.Errorf("GPU %d result carries UUID %q", g.Index, g.UUID)
					}
				}
				return
			}
			t.Fatalf("check %s did not run", c.check)
		})
	}
}
