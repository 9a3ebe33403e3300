package deviceplugin

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"tags.cncf.io/container-device-interface/pkg/parser"

	"github.com/gpunode/gpunode/internal/gpu"
)

// Strategy is how Allocate hands GPUs to a container.
type Strategy string

// Strategies.
const (
	// StrategyEnvvar sets NVIDIA_VISIBLE_DEVICES to the GPUs' UUIDs (the NVIDIA container
	// runtime hook reads it).
	StrategyEnvvar Strategy = "envvar"
	// StrategyCDICRI names the GPUs as CDI devices nvidia.com/gpu=<uuid> in the CRI response.
	StrategyCDICRI Strategy = "cdi-cri"
)

// Strategies lists the strategies Allocate knows.
func Strategies() []Strategy { return []Strategy{StrategyEnvvar, StrategyCDICRI} }

// VisibleDevicesEnv is the variable StrategyEnvvar sets.
const VisibleDevicesEnv = "NVIDIA_VISIBLE_DEVICES"

// CDIVendor and CDIClass make the CDI device names nvidia.com/gpu=<uuid>.
const (
	CDIVendor = "nvidia.com"
	CDIClass  = "gpu"
)

// Allocate answers each container's request by the configured strategy. It refuses a
// device this node does not have and a device that is unhealthy now.
func (p *Plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	health := p.cfg.Health.Health()
	out := &pluginapi.AllocateResponse{}
	for _, cr := range req.GetContainerRequests() {
		devs, err := p.resolve(cr.GetDevicesIds(), health)
		if err != nil {
			return nil, err
		}
		out.ContainerResponses = append(out.ContainerResponses, containerResponse(p.cfg.Strategy, devs))
	}
	return out, nil
}

// resolve looks the IDs up, refusing unknown, repeated and unhealthy ones; the devices
// come back by index.
func (p *Plugin) resolve(ids []string, health map[string]bool) ([]gpu.Device, error) {
	devs := make([]gpu.Device, 0, len(ids))
	seen := map[string]bool{}
	for _, id := range ids {
		d, ok := p.byUUID[id]
		if !ok {
			return nil, status.Errorf(codes.InvalidArgument,
				"allocate %s: unknown device %q: not a GPU of this node", p.cfg.ResourceName, id)
		}
		if seen[id] {
			return nil, status.Errorf(codes.InvalidArgument,
				"allocate %s: device %q requested twice", p.cfg.ResourceName, id)
		}
		seen[id] = true
		if healthString(health, id) != pluginapi.Healthy {
			return nil, status.Errorf(codes.FailedPrecondition,
				"allocate %s: device %q (GPU %d) is unhealthy and out of service", p.cfg.ResourceName, id, d.Index)
		}
		devs = append(devs, d)
	}
	slices.SortFunc(devs, func(a, b gpu.Device) int { return a.Index - b.Index })
	return devs, nil
}

// containerResponse is one container's answer under a strategy.
func containerResponse(s Strategy, devs []gpu.Device) *pluginapi.ContainerAllocateResponse {
	r := &pluginapi.ContainerAllocateResponse{}
	switch s {
	case StrategyCDICRI:
		for _, d := range devs {
			r.CdiDevices = append(r.CdiDevices, &pluginapi.CDIDevice{Name: parser.QualifiedName(CDIVendor, CDIClass, d.UUID)})
		}
	default: // StrategyEnvvar; New refuses unknown strategies
		uuids := make([]string, 0, len(devs))
		for _, d := range devs {
			uuids = append(uuids, d.UUID)
		}
		r.Envs = map[string]string{VisibleDevicesEnv: strings.Join(uuids, ",")}
	}
	return r
}

// GetPreferredAllocation picks, for each container, the devices that share a NUMA node
// where it can, then by index; equal choices always get the same answer.
func (p *Plugin) GetPreferredAllocation(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	out := &pluginapi.PreferredAllocationResponse{}
	for _, cr := range req.GetContainerRequests() {
		ids, err := preferred(p.devices, cr.GetAvailableDeviceIDs(), cr.GetMustIncludeDeviceIDs(), int(cr.GetAllocationSize()))
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "preferred allocation of %s: %v", p.cfg.ResourceName, err)
		}
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return out, nil
}

// preferred chooses size devices from available, must ones first. The rest come from the
// NUMA nodes in this order: nodes that already hold a must device, nodes that can hold
// all the rest (the one with the fewest to spare first, to keep whole nodes free), the others by
// most free devices; ties by node, and within a node by index.
func preferred(all []gpu.Device, available, must []string, size int) ([]string, error) {
	byUUID := make(map[string]gpu.Device, len(all))
	for _, d := range all {
		byUUID[d.UUID] = d
	}
	if size < len(must) {
		return nil, fmt.Errorf("allocation size %d is less than the %d devices that must be included", size, len(must))
	}
	if size > len(available) {
		return nil, fmt.Errorf("allocation size %d is more than the %d devices available", size, len(available))
	}
	chosen := slices.Clone(must)
	mustNodes := map[int]bool{}
	for _, id := range must {
		if d, ok := byUUID[id]; ok {
			mustNodes[d.NUMANode] = true
		}
	}
	var cands []gpu.Device
	free := map[int]int{}
	for _, id := range available {
		d, ok := byUUID[id]
		if !ok || slices.Contains(must, id) {
			continue
		}
		cands = append(cands, d)
		free[d.NUMANode]++
	}
	need := size - len(must)
	rank := func(node int) (int, int) { // lower is better
		switch {
		case mustNodes[node]:
			return 0, 0
		case free[node] >= need:
			return 1, free[node] - need
		default:
			return 2, -free[node]
		}
	}
	slices.SortStableFunc(cands, func(a, b gpu.Device) int {
		ra, ta := rank(a.NUMANode)
		rb, tb := rank(b.NUMANode)
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(ta, tb), cmp.Compare(a.NUMANode, b.NUMANode), cmp.Compare(a.Index, b.Index))
	})
	for _, d := range cands[:min(need, len(cands))] {
		chosen = append(chosen, d.UUID)
	}
	return chosen, nil
}
