package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

var _ gpu.ProcessLister = (*Backend)(nil)

// reset is what a GPU reset does to a simulated GPU: it answers again, its volatile ECC
// counters and clock events start over, a pending row remap is carried out (the spare row
// is used), its links retrain to the base speed and width, throttling and slowdowns end,
// and the driver's recovery action is back to none. Aggregate counters, a row-remap
// failure and retired pages persist, as on real hardware.
func (st *state) reset(i int, at time.Time) {
	if i < 0 || i >= len(st.devs) {
		return
	}
	d, base := &st.devs[i], st.base[i]
	d.ECC.VolatileCorrected, d.ECC.VolatileUncorrected = 0, 0
	d.RowRemap.Pending = false
	d.PCI.LinkGen, d.PCI.LinkWidth = base.PCI.LinkGen, base.PCI.LinkWidth
	d.NVLinks = cloneDevice(base).NVLinks
	d.Thermal.GPUC, d.Power.DrawW = base.Thermal.GPUC, base.Power.DrawW
	d.ClockEvents = cloneDevice(base).ClockEvents
	d.RecoveryAction = base.RecoveryAction
	st.lost[i], st.perf[i] = false, perf{1, 1}
	st.log(at, fmt.Sprintf("NVRM: GPU at PCI:%s: GPU reset (simulated)", pciTag(d.PCI.BusID)))
}

// reboot is a node reboot: every GPU is reset, and the kernel log starts over.
func (st *state) reboot(at time.Time) {
	for i := range st.devs {
		st.reset(i, at)
		st.headed[i] = false
	}
	st.lines = nil
	st.boots++
	st.log(at, fmt.Sprintf("Linux version 6.8.0-sim (simulated boot %d)", st.boots))
}

// ResetGPU records a GPU reset of the GPU with uuid, from now on (see reset).
func (b *Backend) ResetGPU(uuid string) error {
	for i, d := range b.base {
		if d.UUID == uuid {
			return b.Inject(Fault{Type: FaultGPUReset, GPU: i})
		}
	}
	return fmt.Errorf("sim: reset: no GPU %s", uuid)
}

// Reboot records a node reboot, from now on (see reboot).
func (b *Backend) Reboot() error { return b.Inject(Fault{Type: FaultNodeReboot}) }

// BootID is the simulated node's boot ID: it changes with every reboot.
func (b *Backend) BootID() string {
	_, st := b.now()
	return fmt.Sprintf("sim-%s-boot-%d", b.bootKey(), st.boots)
}

// bootKey tells simulated nodes apart in their boot IDs.
func (b *Backend) bootKey() string {
	if len(b.base) == 0 {
		return "empty"
	}
	return b.base[0].UUID
}

// SetProcesses makes the GPU with uuid report procs as running on it (none: nil), for
// tests of steps that must wait for a GPU to be idle.
func (b *Backend) SetProcesses(uuid string, procs []gpu.Process) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.procs == nil {
		b.procs = map[string][]gpu.Process{}
	}
	b.procs[uuid] = slices.Clone(procs)
}

// Processes implements gpu.ProcessLister: what SetProcesses set (none by default).
func (b *Backend) Processes(ctx context.Context, uuid string) ([]gpu.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sim: processes on GPU %s: %w", uuid, err)
	}
	if !slices.ContainsFunc(b.base, func(d gpu.Device) bool { return d.UUID == uuid }) {
		return nil, fmt.Errorf("sim: processes: no GPU %s", uuid)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.procs[uuid]), nil
}
