package cli

// The child processes of `gpunode stress`: by default the command re-executes
// itself once per GPU (`gpunode stress --child-gpus N`, hidden) and runs that
// GPU's tests there, so that a kernel fault or a hung kernel stays in one
// GPU's process (docs/stress.md, "Child processes").

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/stress"
)

// realExecutor is the executor for real GPUs: children of this binary, or
// this process with --in-process; --inject-fault wraps either.
func (o *stressOptions) realExecutor() (stress.Executor, error) {
	if o.fault != "" {
		if _, _, _, err := stress.ParseFault(o.fault); err != nil {
			return nil, usageErrorf("--inject-fault %q: %w", o.fault, err)
		}
	}
	if o.inProcess {
		return o.localExecutor()
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this binary to run the per-GPU child processes (--in-process runs without them): %w", err)
	}
	return &stress.Children{Command: func(gs []stress.GPU) *exec.Cmd {
		args := []string{"stress", "--child-gpus", childGPUList(gs)}
		if o.fault != "" {
			args = append(args, "--inject-fault", o.fault)
		}
		return exec.Command(self, args...)
	}}, nil
}

// localExecutor is the executor that runs the tests in this process (a
// child's, or the command's with --in-process).
func (o *stressOptions) localExecutor() (stress.Executor, error) {
	if o.fault == "" {
		return stress.NewCUDA(), nil
	}
	kind, t, g, err := stress.ParseFault(o.fault)
	if err != nil {
		return nil, usageErrorf("--inject-fault %q: %w", o.fault, err)
	}
	return stress.FaultExecutor{Executor: stress.NewCUDA(), Fault: kind, Test: t, GPU: g}, nil
}

func childGPUList(gs []stress.GPU) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = strconv.Itoa(g.Index)
	}
	return strings.Join(s, ",")
}

// runStressChild serves the child protocol on stdin and stdout until stdin
// closes; the parent reads its results and its last stderr line.
func runStressChild(ctx context.Context, o *stressOptions, in io.Reader, out io.Writer) error {
	exec, err := o.localExecutor()
	if err != nil {
		return err
	}
	if err := stress.ServeChild(ctx, in, out, exec); err != nil {
		return fmt.Errorf("stress child for GPU %s: %w", o.childGPUs, err)
	}
	return nil
}
