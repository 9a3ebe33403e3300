package platform

import (
	"context"
	"errors"
	"log/slog"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/recovery"
	"github.com/gpunode/gpunode/internal/simfleet"
)

// Commands are the host's configured step commands (the agent's flags).
type Commands struct {
	Reset, Reboot, PowerCycle []string
}

// Steps are the remediation steps: the simulated node's own with simulated GPUs (the
// commands are not run), otherwise the commands run on this host.
func (p *Platform) Steps(c Commands) recovery.Steps {
	if p.sim != nil {
		return recovery.Sim{Backend: p.sim}
	}
	pl, _ := p.Backend.(gpu.ProcessLister)
	return &recovery.Host{Processes: pl, ResetCommand: c.Reset, RebootCommand: c.Reboot,
		PowerCycleCommand: c.PowerCycle, Root: p.Root()}
}

// ListenSimControl opens the fault-injection socket of the simulated GPUs at path, for
// 'gpunode sim inject NODE --socket PATH'; real GPUs take no injected faults.
func (p *Platform) ListenSimControl(ctx context.Context, path, node string, log *slog.Logger) (*simfleet.ControlServer, error) {
	if p.sim == nil {
		return nil, errors.New("fault injection: the GPUs are not simulated")
	}
	return simfleet.ListenControl(ctx, path, simfleet.Node{Name: node, Backend: p.sim, Log: log})
}
