package recovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// bootIDPath is the kernel's boot ID under the host root.
const bootIDPath = "proc/sys/kernel/random/boot_id"

// Runner runs a command and returns its combined output.
type Runner func(ctx context.Context, argv []string) ([]byte, error)

// Host carries out steps on a real node by running the configured commands.
type Host struct {
	// Processes tells whether a GPU is idle (the NVML backend).
	Processes gpu.ProcessLister
	// ResetCommand resets one GPU ({gpu} is its UUID); empty: DefaultResetCommand.
	ResetCommand []string
	// RebootCommand and PowerCycleCommand are the node's mechanisms; empty: the step is
	// refused.
	RebootCommand, PowerCycleCommand []string
	// Root is the host's root file system (the boot ID is read from it).
	Root fs.FS
	// Timeout bounds one command (default 5 min).
	Timeout time.Duration
	// Run runs a command (default: os/exec).
	Run Runner
}

// ResetGPU resets the GPU with uuid once no process uses it.
func (h *Host) ResetGPU(ctx context.Context, uuid string) error {
	if err := idle(ctx, h.Processes, uuid); err != nil {
		return err
	}
	cmd := h.ResetCommand
	if len(cmd) == 0 {
		cmd = DefaultResetCommand
	}
	return h.run(ctx, expand(cmd, uuid))
}

// RebootNode runs the reboot command; the node is then going down (done is false).
func (h *Host) RebootNode(ctx context.Context) (bool, error) {
	if len(h.RebootCommand) == 0 {
		return false, fmt.Errorf("%w: no reboot mechanism configured (gpunode agent --reboot-command)", ErrRefused)
	}
	return false, h.run(ctx, h.RebootCommand)
}

// PowerCycle runs the power-cycle hook; the node is then going down (done is false).
func (h *Host) PowerCycle(ctx context.Context) (bool, error) {
	if len(h.PowerCycleCommand) == 0 {
		return false, fmt.Errorf("%w: no power-cycle hook configured (gpunode agent --power-cycle-command)", ErrRefused)
	}
	return false, h.run(ctx, h.PowerCycleCommand)
}

// BootID reads the kernel's boot ID.
func (h *Host) BootID(context.Context) (string, error) {
	if h.Root == nil {
		return "", errors.New("boot ID: no host root")
	}
	b, err := fs.ReadFile(h.Root, bootIDPath)
	if err != nil {
		return "", fmt.Errorf("boot ID: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", fmt.Errorf("boot ID: %s is empty", bootIDPath)
	}
	return id, nil
}

func (h *Host) run(ctx context.Context, argv []string) error {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	run := h.Run
	if run == nil {
		run = execRun
	}
	out, err := run(ctx, argv)
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, lastLine(out))
	}
	return nil
}

func execRun(ctx context.Context, argv []string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	return exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
}

// lastLine is the last non-empty line of a command's output, at most 256 bytes.
func lastLine(out []byte) string {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	l := string(lines[len(lines)-1])
	if len(l) > 256 {
		l = l[:256]
	}
	return l
}
