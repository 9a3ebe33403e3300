package deviceplugin

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
)

// Strategy is how Allocate hands devices to a container.
type Strategy string

// Strategies.
const (
	// StrategyEnvvar sets NVIDIA_VISIBLE_DEVICES to the UUIDs (the NVIDIA container
	// runtime hook reads it).
	StrategyEnvvar Strategy = "envvar"
	// StrategyCDIAnnotations names the devices as CDI devices in a container annotation
	// cdi.k8s.io/<plugin>_<resource> (the CDI library's annotation helpers), for runtimes
	// that read CDI annotations.
	StrategyCDIAnnotations Strategy = "cdi-annotations"
	// StrategyCDICRI names the devices as CDI devices nvidia.com/gpu=<uuid> in the CRI
	// response (kubelet ≥ 1.28 passes them to the runtime).
	StrategyCDICRI Strategy = "cdi-cri"
)

// Strategies lists the strategies Allocate knows.
func Strategies() []Strategy {
	return []Strategy{StrategyEnvvar, StrategyCDIAnnotations, StrategyCDICRI}
}

// VisibleDevicesEnv is the variable StrategyEnvvar sets.
const VisibleDevicesEnv = "NVIDIA_VISIBLE_DEVICES"

// CDIVendor and CDIClass make the CDI device names nvidia.com/gpu=<uuid>.
const (
	CDIVendor = "nvidia.com"
	CDIClass  = "gpu"
)

// CDIAnnotationPlugin is the plugin part of the CDI annotation key.
const CDIAnnotationPlugin = "gpunode.gpu"

// Allocate answers each container's request by the configured strategy. It refuses a
// device this resource does not have, a device whose GPU is unhealthy now, and, when the
// resource is time-sliced with failRequestsGreaterThanOne, more than one replica.
func (p *Plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	health := p.cfg.Health.Health()
	out := &pluginapi.AllocateResponse{}
	for _, cr := range req.GetContainerRequests() {
		devs, err := p.resolve(cr.GetDevicesIds(), health)
		if err != nil {
			return nil, err
		}
		r, err := p.containerResponse(devs)
		if err != nil {
			return nil, err
		}
		out.ContainerResponses = append(out.ContainerResponses, r)
	}
	return out, nil
}

// resolve looks the IDs up, refusing unknown, repeated and unhealthy ones; the devices
// come back by GPU, MIG device and replica.
func (p *Plugin) resolve(ids []string, health map[string]bool) ([]Device, error) {
	name := p.resource.Name
	if p.resource.FailRequestsGreaterThanOne && len(ids) > 1 {
		return nil, status.Errorf(codes.InvalidArgument,
			"allocate %s: %d replicas requested: this time-sliced resource gives at most 1 per container (failRequestsGreaterThanOne)", name, len(ids))
	}
	devs := make([]Device, 0, len(ids))
	seen := map[string]bool{}
	for _, id := range ids {
		d, ok := p.byID[id]
		if !ok {
			return nil, status.Errorf(codes.InvalidArgument, "allocate %s: unknown device %q: not a device of this node", name, id)
		}
		if seen[id] {
			return nil, status.Errorf(codes.InvalidArgument, "allocate %s: device %q requested twice", name, id)
		}
		seen[id] = true
		if healthString(health, d.GPU.UUID) != pluginapi.Healthy {
			return nil, status.Errorf(codes.FailedPrecondition,
				"allocate %s: device %q (GPU %d) is unhealthy and out of service", name, id, d.GPU.Index)
		}
		devs = append(devs, d)
	}
	slices.SortFunc(devs, Device.order)
	return devs, nil
}

// targets are the distinct UUIDs the devices give the container, in device order (two
// replicas of one GPU give it once).
func targets(devs []Device) []string {
	var out []string
	for _, d := range devs {
		if t := d.Target(); !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// containerResponse is one container's answer under the strategy.
func (p *Plugin) containerResponse(devs []Device) (*pluginapi.ContainerAllocateResponse, error) {
	uuids := targets(devs)
	r := &pluginapi.ContainerAllocateResponse{}
	switch p.cfg.Strategy {
	case StrategyCDICRI:
		for _, u := range uuids {
			r.CdiDevices = append(r.CdiDevices, &pluginapi.CDIDevice{Name: parser.QualifiedName(CDIVendor, CDIClass, u)})
		}
	case StrategyCDIAnnotations:
		names := make([]string, 0, len(uuids))
		for _, u := range uuids {
			names = append(names, parser.QualifiedName(CDIVendor, CDIClass, u))
		}
		a, err := cdiapi.UpdateAnnotations(nil, CDIAnnotationPlugin, p.resource.Name, names)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "allocate %s: CDI annotation: %v", p.resource.Name, err)
		}
		r.Annotations = a
	default: // StrategyEnvvar; NewAll refuses unknown strategies
		r.Envs = map[string]string{VisibleDevicesEnv: strings.Join(uuids, ",")}
	}
	return r, nil
}
