package cdispec

import (
	"fmt"

	"github.com/gpunode/gpunode/internal/gpu"
)

// SimulatedHostPath is the host device behind every device node of simulated GPUs:
// /dev/null is a character device on every Linux host, so a container given a simulated
// GPU through CDI sees /dev/nvidia<index> (reads return nothing, writes are discarded) and
// the runtime's CDI injection runs end to end on a node without GPUs.
const SimulatedHostPath = "/dev/null"

// SimulatedEnvPrefix starts the variable each simulated GPU's device sets,
// GPUNODE_SIM_GPU_<index>=<uuid> (a MIG device: GPUNODE_SIM_MIG_<gpu>_<mig>=<uuid>), so a
// container can tell which GPUs it was given. One variable per device: CDI merges the
// environment of several devices by name, so one shared name would keep only the last
// device's value (and NVIDIA_VISIBLE_DEVICES would be acted on by the NVIDIA runtime hook,
// which knows no simulated UUID).
const SimulatedEnvPrefix = "GPUNODE_SIM_"

// SimulatedHost is the Host of simulated GPUs (the sim backend): each GPU's node is
// /dev/nvidia<index>, each MIG device's capability nodes /dev/nvidia-caps/nvidia-cap<N>
// numbered in order, and the control nodes /dev/nvidiactl and /dev/nvidia-uvm, all backed
// by SimulatedHostPath. There are no libraries, binaries or hook: nothing is discovered.
func SimulatedHost(devs []gpu.Device) *Host {
	h := &Host{GPUNodes: map[string]string{}, MIGNodes: map[string][]string{},
		HostPaths: map[string]string{}, Env: map[string][]string{}}
	back := func(node string) string {
		h.HostPaths[node] = SimulatedHostPath
		return node
	}
	caps := 0
	for _, d := range devs {
		h.GPUNodes[d.UUID] = back(fmt.Sprintf("/dev/nvidia%d", d.Index))
		h.Env[d.UUID] = []string{fmt.Sprintf("%sGPU_%d=%s", SimulatedEnvPrefix, d.Index, d.UUID)}
		for _, m := range d.MIGDevices {
			gi := back(fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", caps+1))
			ci := back(fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", caps+2))
			caps += 2
			h.MIGNodes[m.UUID] = []string{gi, ci}
			h.Env[m.UUID] = []string{fmt.Sprintf("%sMIG_%d_%d=%s", SimulatedEnvPrefix, d.Index, m.Index, m.UUID)}
		}
	}
	for _, n := range []string{"/dev/nvidiactl", "/dev/nvidia-uvm"} {
		h.ControlNodes = append(h.ControlNodes, back(n))
	}
	return h
}
