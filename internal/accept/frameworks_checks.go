package accept

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/frameworks"
)

func frameworksChecks() []Check {
	fix := "Run the script by hand to see its full output: `gpunode accept --layers frameworks -o json` " +
		"keeps its stderr in the record; a failing GPU here with clean L1 checks points at the driver, " +
		"CUDA/NCCL libraries or the GPU itself (run `gpunode stress` on it)."
	out := []Check{{ID: "frameworks.pytorch", Layer: LayerFrameworks, Title: "PyTorch imports and sees every GPU",
		Fix: "Install PyTorch built for this driver's CUDA version in the python3 gpunode runs, or run acceptance in a PyTorch image. " + fix,
		Run: checkPyTorch}}
	titles := map[string]string{
		frameworks.TestAllocate:   "Tensors allocated on every GPU",
		frameworks.TestMatmul:     "Matmul on every GPU matches a float64 reference",
		frameworks.TestAllReduce:  "NCCL all-reduce across the local GPUs",
		frameworks.TestCheckpoint: "Checkpoint save and restore round trip",
	}
	for _, name := range frameworks.Tests {
		out = append(out, Check{ID: "frameworks." + name, Layer: LayerFrameworks, Title: titles[name], Fix: fix, Run: frameworkTest(name)})
	}
	return out
}

// unavailable tells a framework layer that could not run (skip) from one that broke (fail).
func unavailable(err error) bool {
	return errors.Is(err, frameworks.ErrNoPython) || errors.Is(err, frameworks.ErrNoTorch) ||
		errors.Is(err, frameworks.ErrNoCUDA) || errors.Is(err, frameworks.ErrNotRun)
}

func checkPyTorch(f *Facts, _ *Policy) Verdict {
	r := f.Frameworks
	switch {
	case f.FrameworksErr != nil && unavailable(f.FrameworksErr):
		return skip("%v", f.FrameworksErr)
	case f.FrameworksErr != nil:
		return fail("the frameworks script did not report: %v", f.FrameworksErr)
	case r == nil:
		return skip("not run: this run gathered no frameworks report")
	}
	v := pass("torch %s (CUDA %s, NCCL %s) on Python %s sees %s in %.1f s", r.Torch, orUnknown(r.CUDA), orUnknown(r.NCCL), r.Python, plural(len(r.GPUs), "GPU"), r.Seconds)
	if f.GPU != nil && len(r.GPUs) < len(f.GPU.Devices) {
		v = fail("torch %s sees %d of the %s the driver reports (CUDA_VISIBLE_DEVICES, or a GPU CUDA cannot open)", r.Torch, len(r.GPUs), plural(len(f.GPU.Devices), "GPU"))
	}
	for i, name := range r.GPUs {
		v.Evidence = append(v.Evidence, fmt.Sprintf("CUDA device %d: %s", i, name))
	}
	return v
}

// frameworkTest turns one test of the script's report into a verdict.
func frameworkTest(name string) func(f *Facts, p *Policy) Verdict {
	return func(f *Facts, _ *Policy) Verdict {
		if f.FrameworksErr != nil {
			if unavailable(f.FrameworksErr) {
				return skip("%v", f.FrameworksErr)
			}
			return skip("no report (see frameworks.pytorch)")
		}
		if f.Frameworks == nil {
			return skip("not run: this run gathered no frameworks report")
		}
		t := f.Frameworks.Find(name)
		if t == nil {
			return fail("the frameworks script reported no %q test", name)
		}
		v := Verdict{Message: fmt.Sprintf("%s (%.1f s)", t.Message, t.Seconds)}
		switch t.Status {
		case frameworks.StatusPass:
			v.Status = StatusPass
		case frameworks.StatusSkip:
			v.Status = StatusSkip
		default:
			v.Status = StatusFail
		}
		for _, g := range t.GPUs {
			gr := GPUResult{Index: g.Index, Status: Status(g.Status), Message: g.Message}
			if f.GPU != nil && g.Index >= 0 && g.Index < len(f.GPU.Devices) {
				gr.UUID = f.GPU.Devices[g.Index].UUID
			}
			v.GPUs = append(v.GPUs, gr)
			v.Evidence = append(v.Evidence, fmt.Sprintf("GPU %d: %s: %s", g.Index, g.Status, g.Message))
		}
		for k, x := range t.Metrics {
			v.Evidence = append(v.Evidence, fmt.Sprintf("%s = %g", k, x))
		}
		if v.Status == StatusFail && strings.TrimSpace(f.Frameworks.Stderr) != "" {
			v.Evidence = append(v.Evidence, "script stderr: "+lastLine(f.Frameworks.Stderr))
		}
		return v
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
