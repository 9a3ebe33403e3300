package frameworks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds a whole run of the script: four short tests on up to 8 GPUs,
// PyTorch's import and CUDA initialisation included.
const DefaultTimeout = 5 * time.Minute

// Options say how to run the script.
type Options struct {
	// Interpreter is the command that runs Python, with any leading arguments; the script's
	// path follows them. Default: python3 from PATH.
	Interpreter []string
	// Timeout bounds the run (default DefaultTimeout); the all-reduce's own wait gets half.
	Timeout time.Duration
	// TempDir is where the script is written (default os.TempDir()).
	TempDir string
	// Args are extra arguments for the script ("--self-test-cpu", "2" runs its tests on
	// the CPU: for testing the script where there is no GPU).
	Args []string
}

// stderrTail is how much of the script's stderr a report or an error keeps.
const stderrTail = 4 << 10

// Run writes the script to a temporary folder and runs it. It returns the report, or an
// error naming what went wrong: ErrNoPython when the interpreter cannot be found,
// ErrNoTorch or ErrNoCUDA (with the report, whose Reason says why) when the tests could
// not run, a timeout (wrapping context.DeadlineExceeded), a non-zero exit or output that is
// not the expected JSON, each with the end of the script's stderr.
func Run(ctx context.Context, o Options) (*Report, error) {
	interp := o.Interpreter
	if len(interp) == 0 {
		interp = []string{"python3"}
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	path, err := exec.LookPath(interp[0])
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner // "executable file not found in $PATH", without exec's quoting of the name
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrNoPython, interp[0], err)
	}
	dir, err := os.MkdirTemp(o.TempDir, "gpunode-frameworks-")
	if err != nil {
		return nil, fmt.Errorf("frameworks: temporary folder: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	script := filepath.Join(dir, ScriptName)
	if err := os.WriteFile(script, Script, 0o600); err != nil {
		return nil, fmt.Errorf("frameworks: write %s: %w", script, err)
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := append(append([]string{}, interp[1:]...), script, "--timeout", strconv.FormatFloat(timeout.Seconds()/2, 'f', 0, 64))
	args = append(args, o.Args...)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	// CUDA numbers GPUs fastest first unless told otherwise; NVML numbers them by PCI bus
	// id. The same order makes the script's GPU 3 the record's GPU 3.
	cmd.Env = append(os.Environ(), "CUDA_DEVICE_ORDER=PCI_BUS_ID", "PYTHONUNBUFFERED=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	killGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	secs := time.Since(start).Seconds()
	tail := lastBytes(stderr.String(), stderrTail)
	name := strings.Join(append(interp[:1:1], ScriptName), " ")
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, fmt.Errorf("%s: stopped after %s: %w%s", name, time.Since(start).Round(time.Millisecond), ctxErr, stderrNote(tail))
	}
	if runErr != nil {
		return nil, fmt.Errorf("%s: %w%s", name, runErr, stderrNote(tail))
	}
	rep, err := Parse(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%s: %w%s", name, err, stderrNote(tail))
	}
	rep.Seconds, rep.Stderr = secs, tail
	switch rep.Unavailable {
	case "torch":
		return rep, fmt.Errorf("%w: %s", ErrNoTorch, rep.Reason)
	case "cuda":
		return rep, fmt.Errorf("%w: %s", ErrNoCUDA, rep.Reason)
	}
	return rep, nil
}

// Parse reads the script's stdout: its last non-empty line is the JSON report (a library
// may print lines of its own before it).
func Parse(stdout []byte) (*Report, error) {
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return nil, errors.New("printed no report on stdout")
	}
	var rep Report
	dec := json.NewDecoder(strings.NewReader(last))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("report is not valid JSON (%w): %q", err, lastBytes(last, 200))
	}
	if err := rep.validate(); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return &rep, nil
}

func lastBytes(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func stderrNote(tail string) string {
	if tail == "" {
		return " (no stderr)"
	}
	return "; stderr: " + tail
}
