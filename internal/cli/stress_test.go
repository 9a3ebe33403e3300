package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/stress"
)

func TestStressUsageErrorsExitTwoNamingTheFlag(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		inStderr string
	}{
		{"an unknown test", []string{"--tests", "hbm,gemm"}, `--tests "hbm,gemm": invalid stress parameter: unknown test "gemm"`},
		{"a GPU index that is not a number", []string{"--gpus", "0,x"}, `--gpus "0,x": "x" is not a GPU index`},
		{"a GPU listed twice", []string{"--gpus", "1,1"}, `--gpus "1,1": GPU 1 is listed twice`},
		{"a GPU the node does not have", []string{"--gpus", "0,9"}, `--gpus "0,9": no GPU 9 on this node (indexes 0, 1, 2, 3, 4, 5, 6, 7)`},
		{"a zero duration", []string{"--duration", "0s"}, "--duration 0s: must be positive"},
		{"a negative timeout", []string{"--timeout", "-1s"}, "--timeout -1s: must not be negative"},
		{"a PCIe floor above 1", []string{"--pcie-min-ratio", "1.5"}, "--pcie-min-ratio 1.5: must be between 0 and 1"},
		{"a duration that is not one", []string{"--duration", "ten"}, `invalid argument "ten" for "--duration"`},
		{"an extra argument", []string{"extra"}, `"extra"`},
		{"an unknown preset", []string{"--sim", "h900x8"}, `unknown sim preset "h900x8"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"stress", "-q"}, tc.args...)
			if tc.name != "an unknown preset" {
				args = append(args, "--sim", "h100x8")
			}
			r := execute(t, args...)
			r.check(t, ExitUsage, nil, []string{"gpunode: ", tc.inStderr, "Run 'gpunode --help' for usage."})
			if r.stdout != "" {
				t.Errorf("a usage error printed a report:\n%s", r.stdout)
			}
		})
	}
}

func TestStressOnSimulatedGPUsSaysSoAndPasses(t *testing.T) {
	r := execute(t, "stress", "--sim", "h200x8", "--duration", "1s")
	r.check(t, ExitOK, []string{
		"SIMULATED GPUs (--sim h200x8): every number below is generated",
		"PASS   hbm     0     cuMemcpyDtoD 4080 GB/s",
		"PASS   pcie    7     host to device 50.4 GB/s (80% of 63.0)",
		"PASS   p2p     7->6  bandwidth 378 GB/s",
		"PASS: 96 pass, 0 fail, 0 skip, 0 not applicable",
		"hbm counts bytes read plus written",
	}, []string{"hbm: started (8 GPUs)", "p2p: 56 pass"})
}

func TestStressOnOneSimulatedGPUHasNoPairs(t *testing.T) {
	r := execute(t, "stress", "-q", "--sim", "h200x1", "--tests", "fp64,p2p")
	r.check(t, ExitOK, []string{"PASS   fp64    0     fp64 FMA 30.6 TFLOP/s", "N/A    p2p     0     peer-to-peer needs two GPUs; 1 selected"}, nil)
	if r.stderr != "" {
		t.Errorf("-q wrote progress:\n%s", r.stderr)
	}
}

// stressDoc is the documented JSON schema (docs/stress.md), decoded strictly.
type stressDoc struct {
	Schema    string `json:"schema"`
	Simulated bool   `json:"simulated"`
	Started   string `json:"started"`
	Seconds   float64
	Duration  string
	Tests     []string
	GPUs      []struct {
		Index        int    `json:"index"`
		CUDAOrdinal  int    `json:"cudaOrdinal"`
		Name         string `json:"name"`
		BusID        string `json:"busId"`
		UUID         string `json:"uuid"`
		Serial       string `json:"serial"`
		PCIeGenMax   int    `json:"pcieGenMax"`
		PCIeWidthMax int    `json:"pcieWidthMax"`
		PCIeGen      int    `json:"pcieGen"`
		PCIeWidth    int    `json:"pcieWidth"`
	} `json:"gpus"`
	Results []struct {
		Test    string `json:"test"`
		GPU     int    `json:"gpu"`
		Peer    *int   `json:"peer"`
		Device  string `json:"device"`
		Status  string `json:"status"`
		Reason  string `json:"reason"`
		Metrics []struct {
			Name      string  `json:"name"`
			Value     float64 `json:"value"`
			Unit      string  `json:"unit"`
			Reference float64 `json:"reference"`
			Ratio     float64 `json:"ratio"`
			MinRatio  float64 `json:"minRatio"`
			Note      string  `json:"note"`
		} `json:"metrics"`
		Findings []struct {
			Kind      string          `json:"kind"`
			Message   string          `json:"message"`
			Memory    json.RawMessage `json:"memory"`
			CUDAError string          `json:"cudaError"`
		} `json:"findings"`
		Clocks *struct {
			Samples       int      `json:"samples"`
			IdleSamples   int      `json:"idleSamples"`
			MinSMClockMHz uint32   `json:"minSmClockMHz"`
			AvgSMClockMHz uint32   `json:"avgSmClockMHz"`
			MaxSMClockMHz uint32   `json:"maxSmClockMHz"`
			Events        []string `json:"events"`
			Throttle      []string `json:"throttle"`
			Error         string   `json:"error"`
		} `json:"clocks"`
		Seconds float64 `json:"seconds"`
	} `json:"results"`
	Summary struct {
		Pass, Fail, Skip, NotApplicable int
	} `json:"summary"`
	Passed bool `json:"passed"`
}

func decodeStress(t *testing.T, s string) stressDoc {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var doc stressDoc
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stress --json is not the documented schema: %v\n%s", err, s)
	}
	return doc
}

func TestStressJSONIsTheDocumentedSchema(t *testing.T) {
	r := execute(t, "stress", "-q", "--sim", "h100x8", "--tests", "pcie,p2p", "--gpus", "2,5", "--json")
	r.check(t, ExitOK, nil, nil)
	doc := decodeStress(t, r.stdout)
	if doc.Schema != "gpunode.dev/stress/v1" || !doc.Simulated || !doc.Passed || len(doc.GPUs) != 2 || doc.GPUs[1].Index != 5 {
		t.Fatalf("document %+v", doc)
	}
	if len(doc.Results) != 4 || doc.Summary.Pass != 4 {
		t.Fatalf("%d results, summary %+v; want pcie on 2 GPUs and p2p both ways", len(doc.Results), doc.Summary)
	}
	pcie, pair := doc.Results[0], doc.Results[3]
	if pcie.GPU != 2 || pcie.Metrics[0].Unit != "GB/s" || pcie.Metrics[0].Reference == 0 || pcie.Metrics[0].MinRatio != 0.75 {
		t.Fatalf("pcie result %+v", pcie)
	}
	if pair.GPU != 5 || pair.Peer == nil || *pair.Peer != 2 || !strings.HasPrefix(pair.Metrics[0].Note, "simulated") {
		t.Fatalf("p2p result %+v", pair)
	}
	if pcie.Clocks == nil || pcie.Clocks.Samples == 0 || pcie.Clocks.AvgSMClockMHz != 345 {
		t.Fatalf("pcie clocks %+v, want the simulated idle clock", pcie.Clocks)
	}
}

func TestStressFailsOnSimulatedFaults(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name     string
		fault    string
		args     []string
		inStdout []string
	}{
		{"a slowed GPU's PCIe copies fall under the floor", "  - gpu: 2\n    type: slow-bandwidth\n    factor: 0.5\n", []string{"--tests", "hbm,pcie"},
			[]string{"PASS   hbm     2     cuMemcpyDtoD 1424 GB/s", "FAIL   pcie    2     host to device 25.2 GB/s is 40% of 63.0 GB/s, under the 75% floor"}},
		{"a hot GPU fails every test it runs with the clock event", "  - gpu: 1\n    type: thermal-throttle\n", []string{"--tests", "fp32"},
			[]string{"FAIL   fp32    1     clocks slowed during the test: hw-slowdown, hw-thermal-slowdown", "PASS   fp32    0"}},
		{"a lost GPU fails with the CUDA error name", "  - gpu: 3\n    type: gpu-lost\n", []string{"--tests", "memory,p2p", "--gpus", "2,3"},
			[]string{"FAIL   memory  3     cuCtxSynchronize: CUDA_ERROR_DEVICE_UNAVAILABLE (46)", "FAIL   p2p     2->3", "PASS   memory  2"}},
		{"uncorrectable ECC errors fail the memory test", "  - gpu: 0\n    type: ecc-uncorrected\n", []string{"--tests", "memory", "--gpus", "0"},
			[]string{"FAIL   memory  0     cuCtxSynchronize: CUDA_ERROR_ECC_UNCORRECTABLE (214)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml",
				"apiVersion: gpunode.dev/sim/v1\npreset: h100x8\nfaults:\n"+tc.fault)
			r := execute(t, append([]string{"stress", "-q", "--sim", path}, tc.args...)...)
			r.check(t, ExitFail, tc.inStdout, nil)
		})
	}
}

func TestStressWithoutLibcudaSkipsEveryTestAndExitsOne(t *testing.T) {
	if _, err := stress.Devices(context.Background()); !errors.Is(err, stress.ErrNoCUDA) {
		t.Skipf("the CUDA driver is present here (Devices: %v); this test covers machines without it", err)
	}
	r := execute(t, "stress", "-q", "--tests", "hbm,fp32,p2p", "--json")
	r.check(t, ExitFail, nil, nil)
	doc := decodeStress(t, r.stdout)
	if doc.Simulated || doc.Passed || doc.Summary.Skip != 3 {
		t.Fatalf("document %+v, want three skips", doc.Summary)
	}
	for _, o := range doc.Results {
		if o.Status != "skip" || !strings.HasPrefix(o.Reason, "libcuda.so.1 not found") {
			t.Fatalf("%s: %s %q, want skipped: libcuda.so.1 not found", o.Test, o.Status, o.Reason)
		}
	}
	text := execute(t, "stress", "-q", "--tests", "memory")
	text.check(t, ExitFail, []string{"SKIP   memory  -     libcuda.so.1 not found", "FAIL: 0 pass, 0 fail, 1 skip"}, nil)
}

func TestStressHelpExplainsTheUnits(t *testing.T) {
	r := execute(t, "stress", "--help")
	r.check(t, ExitOK, []string{"GB/s counts the bytes read plus the bytes written", "TFLOP/s (10^12 FLOP/s", "bytes moved once",
		"GB = 10^9 bytes", "Exit codes: 0 every test passed, 1 a test failed or could not run"}, nil)
}

func TestStressProgressRedrawsAtATerminalAndPrintsLinesOtherwise(t *testing.T) {
	pass := stress.Outcome{Test: stress.TestHBM, GPU: 1, Status: stress.StatusPass,
		Metrics: []stress.Metric{{Name: "cuMemcpyDtoD", Value: 4300.4, Unit: "GB/s"}}}
	fail := stress.Outcome{Test: stress.TestHBM, GPU: 0, Status: stress.StatusFail, Reason: "cuCtxSynchronize: CUDA_ERROR_ECC_UNCORRECTABLE (214)"}
	cases := []struct {
		name string
		tty  bool
		want []string
	}{
		{"at a terminal the test's line is redrawn in place and ends with a mark", true,
			[]string{"\r\033[K  … hbm    0/2 GPUs  0s", "\r\033[K  … hbm    2/2 GPUs  3s", "\r\033[K  ! hbm: 1 pass, 1 fail (3s)\n"}},
		{"piped, every GPU is one plain line", false,
			[]string{"hbm: started (2 GPUs)\n", "hbm 1: pass cuMemcpyDtoD 4300 GB/s\n", "hbm 0: fail cuCtxSynchronize: CUDA_ERROR_ECC_UNCORRECTABLE (214)\n", "hbm: 1 pass, 1 fail (3s)\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf strings.Builder
			clock := time.Unix(0, 0)
			p := &stressProgress{w: &buf, tty: tc.tty, now: func() time.Time { return clock }}
			p.TestStarted(stress.TestHBM, 2)
			p.UnitDone(pass)
			clock = clock.Add(3 * time.Second)
			p.UnitDone(fail)
			p.TestDone(stress.TestHBM, []stress.Outcome{pass, fail})
			out := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("progress lacks %q:\n%q", w, out)
				}
			}
		})
	}
}
