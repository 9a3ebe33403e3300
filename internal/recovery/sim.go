package recovery

import (
	"context"

	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// Sim carries out steps on a simulated node: a reset or a reboot is recorded in the sim
// backend (sim.Backend.ResetGPU, Reboot), and completes at once.
type Sim struct {
	Backend *sim.Backend
}

// ResetGPU resets the simulated GPU once no (simulated) process uses it.
func (s Sim) ResetGPU(ctx context.Context, uuid string) error {
	if err := idle(ctx, s.Backend, uuid); err != nil {
		return err
	}
	return s.Backend.ResetGPU(uuid)
}

// RebootNode reboots the simulated node; it is done when this returns.
func (s Sim) RebootNode(context.Context) (bool, error) { return true, s.Backend.Reboot() }

// PowerCycle is a reboot on a simulated node.
func (s Sim) PowerCycle(ctx context.Context) (bool, error) { return s.RebootNode(ctx) }

// BootID is the simulated node's boot ID.
func (s Sim) BootID(context.Context) (string, error) { return s.Backend.BootID(), nil }
