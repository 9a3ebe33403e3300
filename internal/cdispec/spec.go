package cdispec

import (
	"fmt"
	"slices"
	"strconv"

	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpunode/gpunode/internal/gpu"
	hostcdi "github.com/gpunode/gpunode/internal/host/cdi"
)

// Kind is the CDI kind of the GPUs: devices are named nvidia.com/gpu=<name>.
const Kind = "nvidia.com/gpu"

// mountOptions are the options of every library and binary bind mount (nvidia-ctk's).
var mountOptions = []string{"ro", "nosuid", "nodev", "rbind", "rprivate"}

// Build is the spec for devs on host: one device per GPU named by its UUID, one named by
// its index, one per MIG device named by its UUID and by "<gpu>:<mig>" (nvidia-ctk's
// names), and "all"; each device carries its /dev/nvidia<minor> (a MIG device also its
// capability nodes) and the host's environment for it (Host.Env), the spec's common
// edits carry the control nodes, libraries, binaries and the ld.so cache hook. A node
// backed by another host device (Host.HostPaths) names it as its hostPath. The spec
// is validated with the CDI library before it is returned.
func Build(devs []gpu.Device, h *Host) (*specs.Spec, error) {
	s := &specs.Spec{Kind: Kind}
	var all specs.ContainerEdits
	for _, d := range devs {
		node, ok := h.GPUNodes[d.UUID]
		if !ok {
			return nil, fmt.Errorf("cdi spec: GPU %d (%s) has no device node", d.Index, d.UUID)
		}
		edits := specs.ContainerEdits{DeviceNodes: []*specs.DeviceNode{h.node(node)}, Env: h.Env[d.UUID]}
		s.Devices = append(s.Devices,
			specs.Device{Name: d.UUID, ContainerEdits: edits},
			specs.Device{Name: strconv.Itoa(d.Index), ContainerEdits: cloneEdits(edits)})
		all.DeviceNodes = append(all.DeviceNodes, h.node(node))
		all.Env = append(all.Env, h.Env[d.UUID]...)
		for _, m := range d.MIGDevices {
			caps, ok := h.MIGNodes[m.UUID]
			if !ok {
				return nil, fmt.Errorf("cdi spec: GPU %d MIG device %d (%s) has no capability nodes", d.Index, m.Index, m.UUID)
			}
			edits := specs.ContainerEdits{DeviceNodes: []*specs.DeviceNode{h.node(node)}, Env: h.Env[m.UUID]}
			for _, c := range caps {
				edits.DeviceNodes = append(edits.DeviceNodes, h.node(c))
			}
			s.Devices = append(s.Devices,
				specs.Device{Name: m.UUID, ContainerEdits: edits},
				specs.Device{Name: fmt.Sprintf("%d:%d", d.Index, m.Index), ContainerEdits: cloneEdits(edits)})
		}
	}
	if len(all.DeviceNodes) > 0 {
		s.Devices = append(s.Devices, specs.Device{Name: "all", ContainerEdits: all})
	}
	common := &s.ContainerEdits
	// The legacy runtime hook must not inject the GPUs a second time (nvidia-ctk sets this).
	common.Env = []string{"NVIDIA_VISIBLE_DEVICES=void"}
	for _, n := range h.ControlNodes {
		common.DeviceNodes = append(common.DeviceNodes, h.node(n))
	}
	for _, p := range append(append([]string{}, h.Libraries...), h.Binaries...) {
		common.Mounts = append(common.Mounts, &specs.Mount{HostPath: p, ContainerPath: p, Options: mountOptions})
	}
	if h.Hook != "" && len(h.LibraryDirs) > 0 {
		args := []string{"nvidia-cdi-hook", "update-ldcache"}
		for _, d := range h.LibraryDirs {
			args = append(args, "--folder", d)
		}
		common.Hooks = []*specs.Hook{{HookName: "createContainer", Path: h.Hook, Args: args}}
	}
	v, err := specs.MinimumRequiredVersion(s)
	if err != nil {
		return nil, fmt.Errorf("cdi spec: version: %w", err)
	}
	s.Version = v
	if err := hostcdi.Validate(s); err != nil {
		return nil, fmt.Errorf("cdi spec for %d GPUs is invalid: %w", len(devs), err)
	}
	return s, nil
}

func cloneEdits(e specs.ContainerEdits) specs.ContainerEdits {
	out := specs.ContainerEdits{Env: slices.Clone(e.Env)}
	for _, n := range e.DeviceNodes {
		c := *n
		out.DeviceNodes = append(out.DeviceNodes, &c)
	}
	return out
}
