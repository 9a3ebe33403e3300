// Package recovery carries out the node-side remediation steps the controller asks the
// agent for: a GPU reset (refused while any process uses the GPU), a node reboot, a power
// cycle through a configured hook, and the node's boot ID that proves a reboot happened.
// Host runs configured commands on a real node; Sim acts on a simulated node.
//
// Evidence capture is internal/evidence's; the agent wires it.
package recovery

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
)

// Steps carries out the node-side remediation steps: Host on a real node, Sim on a
// simulated one (internal/platform chooses). It is the one list of the agent's steps: a new
// node-side step is a method here, on Host and on Sim, and a case in the agent's dispatch.
type Steps interface {
	// ResetGPU resets one GPU; it returns an error wrapping ErrRefused, without touching
	// the GPU, while a process uses it.
	ResetGPU(ctx context.Context, uuid string) error
	// RebootNode reboots the node. done is true when the reboot completed in this process
	// (a simulated node); otherwise the node is going down and the answer is written after
	// the boot, when the boot ID has changed.
	RebootNode(ctx context.Context) (done bool, err error)
	// PowerCycle power-cycles the node through the configured hook; like RebootNode.
	PowerCycle(ctx context.Context) (done bool, err error)
	// BootID identifies the node's current boot.
	BootID(ctx context.Context) (string, error)
}

var (
	_ Steps = (*Host)(nil)
	_ Steps = Sim{}
)

// ErrRefused marks a step that was not started: a process still uses the GPU, or no
// mechanism is configured. Nothing was touched.
var ErrRefused = errors.New("step refused")

// GPUPlaceholder in a command stands for the GPU's UUID.
const GPUPlaceholder = "{gpu}"

// DefaultResetCommand resets one GPU with the driver's tool.
var DefaultResetCommand = []string{"nvidia-smi", "--gpu-reset", "-i", GPUPlaceholder}

// idle returns an error wrapping ErrRefused while a process uses the GPU with uuid.
func idle(ctx context.Context, pl gpu.ProcessLister, uuid string) error {
	if pl == nil {
		return fmt.Errorf("%w: cannot tell which processes use GPU %s (the backend does not list them)", ErrRefused, uuid)
	}
	procs, err := pl.Processes(ctx, uuid)
	if err != nil {
		return fmt.Errorf("%w: listing the processes on GPU %s: %w", ErrRefused, uuid, err)
	}
	if len(procs) == 0 {
		return nil
	}
	pids := make([]string, 0, len(procs))
	for _, p := range procs {
		pids = append(pids, fmt.Sprintf("%d (%s)", p.PID, p.Kind))
	}
	return fmt.Errorf("%w: %d process(es) still use GPU %s: %s", ErrRefused, len(procs), uuid, strings.Join(pids, ", "))
}

// expand replaces GPUPlaceholder in every argument of cmd with uuid.
func expand(cmd []string, uuid string) []string {
	out := make([]string, len(cmd))
	for i, a := range cmd {
		out[i] = strings.ReplaceAll(a, GPUPlaceholder, uuid)
	}
	return out
}
