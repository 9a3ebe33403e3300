package frameworks

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fake returns an interpreter that runs a testdata shell script in place of python3.
func fake(t *testing.T, name string) []string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return []string{"/bin/sh", p}
}

func TestRunWithFakePython(t *testing.T) {
	cases := []struct {
		name    string
		script  string
		timeout time.Duration
		wantErr error  // errors.Is target; nil = no error
		errText string // part of the error text
		check   func(t *testing.T, r *Report)
	}{
		{name: "a healthy node's report is parsed into typed results", script: "fake_pass.sh",
			check: func(t *testing.T, r *Report) {
				if r.Torch != "2.11.0" || len(r.GPUs) != 1 || len(r.Tests) != 4 {
					t.Errorf("report %+v", r)
				}
				if m := r.Find(TestMatmul); m == nil || m.Status != StatusPass || m.GPUs[0].TFLOPs != 48.1 {
					t.Errorf("matmul %+v", m)
				}
				if a := r.Find(TestAllReduce); a == nil || a.Status != StatusSkip || !strings.Contains(a.Message, "one GPU") {
					t.Errorf("all-reduce %+v", a)
				}
				if !strings.Contains(r.Stderr, "a warning on stderr") || r.Seconds <= 0 {
					t.Errorf("stderr %q, seconds %g", r.Stderr, r.Seconds)
				}
			}},
		{name: "a failed test is a report, not an error", script: "fake_fail.sh",
			check: func(t *testing.T, r *Report) {
				m := r.Find(TestMatmul)
				if m == nil || m.Status != StatusFail || m.GPUs[1].Status != StatusFail {
					t.Errorf("matmul %+v", m)
				}
				if a := r.Find(TestAllReduce); a.Metrics["busbwGBps"] != 310.5 {
					t.Errorf("all-reduce metrics %v", a.Metrics)
				}
			}},
		{name: "a report cut short is bad JSON", script: "fake_badjson.sh", errText: "not valid JSON"},
		{name: "missing torch makes the layer unavailable with the reason", script: "fake_notorch.sh", wantErr: ErrNoTorch,
			errText: "No module named 'torch'"},
		{name: "a hung script is stopped at the timeout with its stderr", script: "fake_hang.sh", timeout: 300 * time.Millisecond,
			wantErr: context.DeadlineExceeded, errText: "waiting for rank 1"},
		{name: "a crashed interpreter's exit and stderr are reported", script: "fake_crash.sh", errText: "exit status 139; stderr: Fatal Python error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			r, err := Run(context.Background(), Options{Interpreter: fake(t, c.script), Timeout: c.timeout, TempDir: t.TempDir()})
			// A timeout kills the script's whole process group: no wait for the orphaned sleep.
			if took := time.Since(start); (c.timeout > 0 && took > c.timeout+2*time.Second) || took > 10*time.Second {
				t.Errorf("Run took %s", took)
			}
			switch {
			case c.wantErr == nil && c.errText == "":
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				c.check(t, r)
			default:
				if err == nil {
					t.Fatalf("Run returned no error, report %+v", r)
				}
				if c.wantErr != nil && !errors.Is(err, c.wantErr) {
					t.Errorf("error %v is not %v", err, c.wantErr)
				}
				if !strings.Contains(err.Error(), c.errText) {
					t.Errorf("error %q does not contain %q", err, c.errText)
				}
			}
		})
	}
}

func TestRunWithoutInterpreterIsErrNoPython(t *testing.T) {
	_, err := Run(context.Background(), Options{Interpreter: []string{"/nonexistent/python3"}})
	if !errors.Is(err, ErrNoPython) || !strings.Contains(err.Error(), "/nonexistent/python3") {
		t.Errorf("Run = %v, want ErrNoPython naming the interpreter", err)
	}
}

func TestParseRefusesMalformedReports(t *testing.T) {
	cases := []struct {
		name, stdout, want string
	}{
		{"empty output has no report", "\n\n", "printed no report"},
		{"another schema is refused", `{"schema": "v0", "tests": []}`, `schema "v0"`},
		{"a report without tests is refused", `{"schema": "gpunode.dev/frameworks/v1", "python": "3"}`, "no tests"},
		{"an unknown status is refused", `{"schema": "gpunode.dev/frameworks/v1", "tests": [{"name": "matmul", "status": "ok", "message": "m"}]}`, `status "ok"`},
		{"a test without a message is refused", `{"schema": "gpunode.dev/frameworks/v1", "tests": [{"name": "matmul", "status": "pass"}]}`, "needs a name and a message"},
		{"an unknown field is refused", `{"schema": "gpunode.dev/frameworks/v1", "extra": 1}`, "unknown field"},
		{"an unknown unavailability is refused", `{"schema": "gpunode.dev/frameworks/v1", "unavailable": "jax"}`, `unavailable "jax"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Parse([]byte(c.stdout)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// The embedded script with the real python3 of this machine: it must compile, and where
// torch is missing (CI) it must say so in a report Run turns into ErrNoTorch.
func TestEmbeddedScriptWithRealPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the embedded script cannot be compiled or run here")
	}
	dir := t.TempDir()
	r, err := Run(context.Background(), Options{Interpreter: []string{py, "-c",
		"import py_compile, sys; py_compile.compile(sys.argv[1], doraise=True); exec(open(sys.argv[1]).read(), {'__name__': '__main__'})"},
		TempDir: dir})
	if err != nil && !errors.Is(err, ErrNoTorch) && !errors.Is(err, ErrNoCUDA) {
		t.Fatalf("the embedded script failed under %s: %v", py, err)
	}
	if r == nil {
		t.Fatal("no report")
	}
	if r.Python == "" {
		t.Errorf("the report does not name the Python version: %+v", r)
	}
	switch {
	case errors.Is(err, ErrNoTorch):
		if !strings.Contains(r.Reason, "torch") {
			t.Errorf("reason %q does not name torch", r.Reason)
		}
	case errors.Is(err, ErrNoCUDA):
		t.Logf("torch %s without a GPU: %s", r.Torch, r.Reason)
	default:
		for _, tt := range r.Tests {
			if tt.Status == StatusFail {
				t.Errorf("%s failed on this machine: %s", tt.Name, tt.Message)
			}
		}
	}
}

// torchPython finds a python3 that imports torch; empty when there is none.
func torchPython() string {
	for _, c := range []string{"python3", "/usr/bin/python3"} {
		p, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		if exec.Command(p, "-c", "import torch").Run() == nil {
			return p
		}
	}
	return ""
}

// The embedded script's own tests, run on the CPU where a python3 with torch is installed:
// --self-test-cpu 2 makes two gloo ranks stand in for two GPUs (allocation, the matmul
// against its rounding bound, a real two-process all-reduce, the checkpoint round trip), and
// --self-test-corrupt matmul puts one wrong element into the last rank's product: the
// matmul must pass on rank 0, fail on rank 1, and nothing else may fail. One run, as
// starting torch costs seconds.
func TestEmbeddedScriptSelfTestOnCPU(t *testing.T) {
	py := torchPython()
	if py == "" {
		t.Skip("no python3 with torch on this machine (Debian: apt-get install python3-torch): the script's CPU self-test cannot run")
	}
	args := []string{"--self-test-cpu", "2", "--self-test-corrupt", "matmul"}
	r, err := Run(context.Background(), Options{Interpreter: []string{py}, Args: args, Timeout: 3 * time.Minute, TempDir: t.TempDir()})
	if err != nil {
		t.Fatalf("self-test: %v", err)
	}
	if len(r.Tests) != len(Tests) {
		t.Fatalf("%d tests reported, want %d: %+v", len(r.Tests), len(Tests), r.Tests)
	}
	for i, name := range Tests {
		tt := r.Tests[i]
		want := []Status{StatusPass, StatusPass}
		if name == TestMatmul {
			want = []Status{StatusPass, StatusFail}
		}
		if tt.Name != name || len(tt.GPUs) != 2 {
			t.Fatalf("test %d: %s with %d per-rank results, want %s with 2", i, tt.Name, len(tt.GPUs), name)
		}
		for rank, w := range want {
			if g := tt.GPUs[rank]; g.Status != w {
				t.Errorf("%s rank %d: %s, want %s: %s (stderr: %s)", name, rank, g.Status, w, g.Message, r.Stderr)
			}
		}
	}
	if m := r.Find(TestMatmul); m.Status != StatusFail || !strings.Contains(m.Message, "GPU 1: 1 of 262144 elements beyond the float32 rounding bound") {
		t.Errorf("matmul: %s %q", m.Status, m.Message)
	}
	if a := r.Find(TestAllReduce); a.Metrics["busbwGBps"] <= 0 {
		t.Errorf("all-reduce reported no bus bandwidth: %+v", a)
	}
	t.Logf("torch %s: %s", r.Torch, r.Find(TestMatmul).GPUs[0].Message)
}

// Where torch is installed but sees no GPU (a CPU build, no driver), the layer is
// unavailable with torch's own words, not failed.
func TestEmbeddedScriptWithTorchButNoGPU(t *testing.T) {
	py := torchPython()
	if py == "" {
		t.Skip("no python3 with torch on this machine: the no-GPU path of a torch install cannot run")
	}
	if exec.Command(py, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)").Run() == nil {
		t.Skip("torch sees a GPU here: the no-GPU path does not apply")
	}
	r, err := Run(context.Background(), Options{Interpreter: []string{py}, TempDir: t.TempDir()})
	if !errors.Is(err, ErrNoCUDA) || r == nil || !strings.Contains(r.Reason, "torch.cuda.is_available() is False") {
		t.Errorf("Run = %+v, %v; want ErrNoCUDA with torch's reason", r, err)
	}
}
