package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/baseline"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/record"
	"github.com/gpunode/gpunode/internal/stress"
)

const scenarioSlowHBM = `apiVersion: gpunode.dev/sim/v1
preset: h100x8
faults:
  - gpu: 2
    type: slow-bandwidth
    factor: 0.5
`

const scenarioSlowCompute = `apiVersion: gpunode.dev/sim/v1
preset: h200x1
faults:
  - gpu: 0
    type: slow-compute
    factor: 0.8
`

// fakePython writes an executable stand-in for python3 that prints report (one JSON line).
func fakePython(t *testing.T, report string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "python3")
	script := "#!/bin/sh\ncat <<'JSON'\n" + report + "\nJSON\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

const onePassingGPU = `{"schema": "gpunode.dev/frameworks/v1", "python": "3.12.3", "torch": "2.11.0", "cuda": "13.0", "gpus": ["NVIDIA H200"], "tests": [` +
	`{"name": "allocate", "status": "pass", "message": "1 GiB allocated, written and read back on 1 GPUs", "seconds": 0.4}, ` +
	`{"name": "matmul", "status": "pass", "message": "2048x2048 float32 matmul on 1 GPUs matches a float64 CPU reference", "seconds": 1.2}, ` +
	`{"name": "all-reduce", "status": "skip", "message": "one GPU: an all-reduce across local GPUs needs at least two", "seconds": 0}, ` +
	`{"name": "checkpoint", "status": "pass", "message": "saved and restored bit for bit on 1 GPUs", "seconds": 0.3}]}`

func TestAcceptPerformanceAndFrameworksLayers(t *testing.T) {
	dir := t.TempDir()
	slowHBM := writeFile(t, dir, "slow-hbm.yaml", scenarioSlowHBM)
	slowCompute := writeFile(t, dir, "slow-compute.yaml", scenarioSlowCompute)
	strict := writeFile(t, dir, "strict.yaml", "apiVersion: gpunode.dev/v1alpha1\nkind: PerformanceBaseline\nmodels:\n  - model: H100 SXM5 80GB\n    names: [NVIDIA H100 80GB HBM3]\n    hbmCopyGBps: 5000\n")
	bad := writeFile(t, dir, "bad.yaml", "apiVersion: gpunode.dev/v1alpha1\nkind: PerformanceBaseline\nmodels:\n  - model: X\n    fp32TFLOPs: -1\n")
	cases := []struct {
		name     string
		args     []string
		code     int
		inStdout []string
		inStderr []string
		absent   []string
	}{
		{"healthy simulated H100s meet every baseline", []string{"--sim", "h100x8", "--layers", "performance"}, ExitOK,
			[]string{"PASS   performance.hbm-copy", "8/8 GPUs: 2847.5 GB/s = 100% of 2847.5", "PASS   performance.pcie-d2h"}, nil, []string{"hardware.", "FAIL"}},
		{"a GPU with half its HBM bandwidth fails the node", []string{"--sim", slowHBM, "--layers", "L4"}, ExitFail,
			[]string{"FAIL   performance.hbm-copy", "GPU 2: 1423.8 GB/s is 50% of the 2847.5 baseline, below 90%", "FAIL   performance.pcie-h2d", "PASS   performance.fp32"}, nil, nil},
		{"a GPU at 80% compute fails FP32 and FP64 but not bandwidth", []string{"--sim", slowCompute, "--layers", "performance"}, ExitFail,
			[]string{"FAIL   performance.fp32", "is 80% of the 60.3 baseline", "FAIL   performance.fp64", "PASS   performance.hbm-copy"}, nil, nil},
		{"a GPU at 80% compute passes a policy that asks for 75%", []string{"--sim", slowCompute, "--layers", "performance", "--policy", "POLICY75"}, ExitOK,
			[]string{"PASS   performance.fp32"}, nil, nil},
		{"a baseline file above what the GPUs reach fails them", []string{"--sim", "h100x8", "--layers", "performance", "--baseline", strict}, ExitFail,
			[]string{"FAIL   performance.hbm-copy", "is 57% of the 5000.0 baseline", strict}, nil, nil},
		{"a bad baseline file is a usage error naming file and line", []string{"--sim", "h100x8", "--layers", "performance", "--baseline", bad}, ExitUsage,
			nil, []string{"baseline " + bad + ": line 4: models[0]: fp32: must be a positive number"}, nil},
		{"the frameworks layer does not run PyTorch against simulated GPUs", []string{"--sim", "h100x8", "--layers", "frameworks"}, ExitOK,
			[]string{"SKIP   frameworks.pytorch", "the GPUs are simulated", "SKIP   frameworks.matmul"}, nil, nil},
		{"the frameworks layer without python3 skips saying so", []string{"--layers", "frameworks", "--kernel-log", "none", "--python", "/nonexistent/python3"}, ExitOK,
			[]string{"SKIP   frameworks.pytorch", "python3 not found: /nonexistent/python3"}, nil, nil},
		{"the frameworks layer parses the script's report", []string{"--layers", "L5", "--kernel-log", "none", "--python", "FAKE"}, ExitOK,
			[]string{"PASS   frameworks.pytorch", "torch 2.11.0", "PASS   frameworks.matmul", "SKIP   frameworks.all-reduce", "one GPU"}, nil, nil},
		{"a frameworks timeout that is not positive is a usage error", []string{"--sim", "h100x8", "--frameworks-timeout", "0s"}, ExitUsage,
			nil, []string{"--frameworks-timeout 0s: must be positive"}, nil},
	}
	policy75 := writeFile(t, dir, "p75.yaml", "apiVersion: gpunode.dev/v1alpha1\nkind: GPUNodePolicy\nmetadata:\n  name: p75\nspec:\n  acceptance:\n    thresholds:\n      minPerformancePercent: 75\n")
	fake := fakePython(t, onePassingGPU)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"accept", "-q", "--node-name", "test-node"}, tc.args...)
			for i, a := range args {
				switch a {
				case "POLICY75":
					args[i] = policy75
				case "FAKE":
					args[i] = fake
				}
			}
			r := execute(t, args...)
			r.check(t, tc.code, tc.inStdout, tc.inStderr)
			for _, s := range tc.absent {
				if strings.Contains(r.stdout, s) {
					t.Errorf("stdout has %q:\n%s", s, r.stdout)
				}
			}
		})
	}
}

func TestAcceptRecordCarriesMeasurementsAndFrameworks(t *testing.T) {
	dir := t.TempDir()
	slowHBM := writeFile(t, dir, "slow-hbm.yaml", scenarioSlowHBM)
	r := execute(t, "accept", "-q", "--node-name", "test-node", "--sim", slowHBM, "--layers", "performance", "-o", "json", "--output-dir", dir)
	if r.code != ExitFail {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var rec record.Record
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	var found bool
	for _, c := range rec.Checks {
		for _, m := range c.Measurements {
			if c.ID == "performance.hbm-copy" && m.GPU == 2 {
				found = true
				if m.Measured != 1423.75 || m.Baseline != 2847.5 || m.Ratio != 0.5 || m.Unit != "GB/s" || m.MinRatio != 0.9 {
					t.Errorf("GPU 2 measurement %+v", m)
				}
			}
		}
	}
	if !found {
		t.Fatal("no HBM measurement for GPU 2 in the record")
	}
	md, err := os.ReadFile(filepath.Join(dir, rec.ID+".md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| 2 | hbm-copy | 1423.8 | 2847.5 | GB/s | 50.0% | 90% | FAIL |") {
		t.Errorf("Markdown record lacks GPU 2's row:\n%s", md)
	}
}

func TestCUDAPerformance(t *testing.T) {
	devs := []gpu.Device{{Index: 0, UUID: "GPU-0", Name: "NVIDIA H200"}}
	t.Run("CUDA_VISIBLE_DEVICES set refuses to measure, since CUDA's numbers would not be NVML's", func(t *testing.T) {
		t.Setenv("CUDA_VISIBLE_DEVICES", "1")
		if _, err := cudaPerformance(context.Background(), devs); err == nil || !strings.Contains(err.Error(), `CUDA_VISIBLE_DEVICES="1" is set`) {
			t.Errorf("cudaPerformance = %v", err)
		}
	})
	t.Run("GPU 0 is measured through the CUDA driver, or the driver's absence is reported", func(t *testing.T) {
		t.Setenv("CUDA_DEVICE_ORDER", "")
		if v, set := os.LookupEnv("CUDA_VISIBLE_DEVICES"); set {
			t.Skipf("CUDA_VISIBLE_DEVICES=%q is set for this test run: accept refuses to measure under it (the case above)", v)
		}
		gps, err := cudaPerformance(context.Background(), devs)
		if errors.Is(err, stress.ErrNoCUDA) {
			t.Skipf("no CUDA driver on this machine (%v): the measurement itself runs only on a GPU node", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if os.Getenv("CUDA_DEVICE_ORDER") != "PCI_BUS_ID" {
			t.Error("CUDA_DEVICE_ORDER was not set to PCI_BUS_ID")
		}
		g := gps[0]
		if len(g.Errors) > 0 || g.Values[baseline.HBMCopy] <= 0 || g.Values[baseline.FP32] <= 0 {
			t.Errorf("GPU 0: %+v", g)
		}
		t.Logf("GPU 0: HBM %.1f GB/s (%s), FP32 %.2f TFLOP/s", g.Values[baseline.HBMCopy], g.Detail[baseline.HBMCopy], g.Values[baseline.FP32])
	})
}
