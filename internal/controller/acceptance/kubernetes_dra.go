package acceptance

import (
	"context"
	"fmt"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// CheckDRA is the L2 check of a node that serves its GPUs through DRA.
const CheckDRA = "kubernetes.dra"

// DRA facts: gpunode's own driver, and the device attributes a GPU is known by (gpunode's
// driver and NVIDIA's publish them in the driver's domain).
const (
	DriverGPUNode       = v1alpha1.DRADriver
	AttributeType       = "type"
	AttributeUUID       = "uuid"
	AttributeParentUUID = "parentUUID"
	deviceTypeGPU       = "gpu"
	deviceTypeMIG       = "mig"
	// HealthTaintKey is the device taint gpunode's driver publishes on an unhealthy GPU.
	HealthTaintKey = "gpu.gpunode.dev/health"
)

// GPUAPIOf is the API that serves the node's GPUs (v1alpha1.GPUAPIDRA or
// GPUAPIDevicePlugin): the node's gpunode.dev/gpu-api label when set, else what the agent
// reports in status.gpuAPI, else DRA when gpunode's driver publishes a slice for the node.
func GPUAPIOf(f KubernetesFacts) string {
	if v := f.Node.Labels[v1alpha1.LabelGPUAPI]; v == v1alpha1.GPUAPIDRA || v == v1alpha1.GPUAPIDevicePlugin {
		return v
	}
	if v := f.GPUNode.Status.GPUAPI; v != "" {
		return v
	}
	if slices.ContainsFunc(f.Slices, func(s resourcev1.ResourceSlice) bool { return s.Spec.Driver == DriverGPUNode }) {
		return v1alpha1.GPUAPIDRA
	}
	return v1alpha1.GPUAPIDevicePlugin
}

// GPUPool is one driver's pool of devices on a node, at its newest generation.
type GPUPool struct {
	Driver, Pool string
	Generation   int64
	Devices      []resourcev1.Device
}

// NodeGPUPools are the pools that publish node's GPUs, sorted by driver and pool: from the
// slices whose spec.nodeName or spec.pool.name is the node, each pool at its newest
// generation, of gpunode's driver or of a driver one of whose devices carries the uuid of
// one of gpus (the node's GPUs): another driver's pool (NICs) is left out.
func NodeGPUPools(node string, gpus []string, published []resourcev1.ResourceSlice) []GPUPool {
	byKey := map[string]*GPUPool{}
	var keys []string
	for _, s := range published {
		if (s.Spec.NodeName == nil || *s.Spec.NodeName != node) && s.Spec.Pool.Name != node {
			continue
		}
		key := s.Spec.Driver + "/" + s.Spec.Pool.Name
		p, ok := byKey[key]
		switch {
		case !ok:
			p = &GPUPool{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Generation: s.Spec.Pool.Generation}
			byKey[key] = p
			keys = append(keys, key)
		case s.Spec.Pool.Generation > p.Generation:
			p.Generation, p.Devices = s.Spec.Pool.Generation, nil
		case s.Spec.Pool.Generation < p.Generation:
			continue
		}
		p.Devices = append(p.Devices, s.Spec.Devices...)
	}
	slices.Sort(keys)
	var out []GPUPool
	for _, k := range keys {
		p := byKey[k]
		if p.Driver == DriverGPUNode || slices.ContainsFunc(p.Devices, func(d resourcev1.Device) bool {
			u := DeviceAttribute(p.Driver, d, AttributeUUID)
			return u != "" && slices.Contains(gpus, u)
		}) {
			out = append(out, *p)
		}
	}
	return out
}

// DeviceAttribute is the string attribute name of a device of driver: unqualified (the
// driver's own domain) or qualified with the driver's name; "" when absent.
func DeviceAttribute(driver string, d resourcev1.Device, name string) string {
	for _, k := range []resourcev1.QualifiedName{resourcev1.QualifiedName(name), resourcev1.QualifiedName(driver + "/" + name)} {
		if a, ok := d.Attributes[k]; ok && a.StringValue != nil {
			return *a.StringValue
		}
	}
	return ""
}

// ListNodeSlices reads the ResourceSlices published for node from c: those whose
// spec.nodeName is the node and those whose pool is named after it (fields the API server
// selects on), so c must read ResourceSlices uncached (remediation.ClientOptions). A server
// without resource.k8s.io/v1 has none.
func ListNodeSlices(ctx context.Context, c client.Reader, node string) ([]resourcev1.ResourceSlice, error) {
	var out []resourcev1.ResourceSlice
	for _, field := range []string{resourcev1.ResourceSliceSelectorNodeName, "spec.pool.name"} {
		var list resourcev1.ResourceSliceList
		err := c.List(ctx, &list, client.MatchingFields{field: node})
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list the ResourceSlices of node %s (%s): %w", node, field, err)
		}
		for _, s := range list.Items {
			if !slices.ContainsFunc(out, func(o resourcev1.ResourceSlice) bool { return o.Name == s.Name }) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// nodeGPUUUIDs are the UUIDs of the agent's GPUs: its inventory's and its health's.
func nodeGPUUUIDs(gn *v1alpha1.GPUNode) []string {
	var out []string
	for _, g := range gn.Status.Inventory.GPUs {
		out = append(out, g.UUID)
	}
	for _, g := range gn.Status.GPUHealth {
		if g.UUID != "" && !slices.Contains(out, g.UUID) {
			out = append(out, g.UUID)
		}
	}
	return out
}

// published is one GPU as the slices show it: its devices and whether one is tainted.
type published struct {
	devices []string
	taints  []string
}

// checkDRA, on a node that serves its GPUs through DRA: the node's ResourceSlices publish
// its GPUs (gpunode's driver or another, NVIDIA's), as many GPUs (devices of type gpu, or
// the parents of MIG devices) as the agent found, and each device's taints agree with the
// GPU's health: an unhealthy GPU's device is tainted (NoSchedule or NoExecute), a healthy
// one's is not. It is applied on DRA nodes only (KubernetesChecks).
func checkDRA(f KubernetesFacts) verdict {
	n := agentGPUs(f)
	gpus := nodeGPUUUIDs(f.GPUNode)
	pools := NodeGPUPools(f.Node.Name, gpus, f.Slices)
	ev := []string{gpuAPIEvidence(f), fmt.Sprintf("agent's GPUs: %d", n)}
	if n == 0 {
		return judged(statusSkip, ev, "the agent reported no GPU: nothing should be published")
	}
	if len(pools) == 0 {
		ev = append(ev, fmt.Sprintf("%d ResourceSlices for the node, none of driver %s or with a device carrying a GPU's uuid", len(f.Slices), DriverGPUNode))
		return judged(statusFail, ev, "no ResourceSlice publishes the node's GPUs: the DRA driver has not published them (is the agent running with --dra?)")
	}
	byGPU := map[string]*published{}
	for _, p := range pools {
		names := make([]string, 0, len(p.Devices))
		for _, d := range p.Devices {
			names = append(names, d.Name)
			uuid := DeviceAttribute(p.Driver, d, AttributeUUID)
			switch DeviceAttribute(p.Driver, d, AttributeType) {
			case deviceTypeMIG:
				uuid = DeviceAttribute(p.Driver, d, AttributeParentUUID)
			case deviceTypeGPU:
			default:
				if !slices.Contains(gpus, uuid) {
					continue // not a GPU of the node's
				}
			}
			if uuid == "" {
				continue
			}
			g := byGPU[uuid]
			if g == nil {
				g = &published{}
				byGPU[uuid] = g
			}
			g.devices = append(g.devices, d.Name)
			for _, t := range d.Taints {
				if t.Effect == resourcev1.DeviceTaintEffectNoSchedule || t.Effect == resourcev1.DeviceTaintEffectNoExecute {
					g.taints = append(g.taints, fmt.Sprintf("%s: %s=%s:%s", d.Name, t.Key, t.Value, t.Effect))
				}
			}
		}
		ev = append(ev, fmt.Sprintf("driver %s pool %s generation %d: %d devices (%s)", p.Driver, p.Pool, p.Generation, len(p.Devices), strings.Join(names, ", ")))
	}
	if int64(len(byGPU)) != n {
		return judged(statusFail, ev, "%d GPUs published as devices, %d expected = the agent's GPUs", len(byGPU), n)
	}
	var wrong []string
	for _, h := range f.GPUNode.Status.GPUHealth {
		g := byGPU[h.UUID]
		switch {
		case g == nil:
			wrong = append(wrong, fmt.Sprintf("GPU %d (%s) is not published", h.Index, h.UUID))
		case h.Health == v1alpha1.HealthUnhealthy && len(g.taints) == 0:
			wrong = append(wrong, fmt.Sprintf("GPU %d (%s) is unhealthy but device %s carries no taint", h.Index, h.UUID, strings.Join(g.devices, ",")))
		case h.Health == v1alpha1.HealthHealthy && len(g.taints) > 0:
			wrong = append(wrong, fmt.Sprintf("GPU %d (%s) is healthy but tainted (%s)", h.Index, h.UUID, strings.Join(g.taints, "; ")))
		}
	}
	if len(wrong) > 0 {
		return judged(statusFail, append(wrong, ev...), "device taints disagree with the GPUs' health: %s", strings.Join(wrong, "; "))
	}
	drivers := make([]string, 0, len(pools))
	for _, p := range pools {
		if !slices.Contains(drivers, p.Driver) {
			drivers = append(drivers, p.Driver)
		}
	}
	return judged(statusPass, ev, "%d GPUs published by %s; device taints agree with the GPUs' health", n, strings.Join(drivers, ", "))
}

// gpuAPIEvidence says where the node's API comes from.
func gpuAPIEvidence(f KubernetesFacts) string {
	label, ok := f.Node.Labels[v1alpha1.LabelGPUAPI]
	return fmt.Sprintf("%s=%q (present: %t), status.gpuAPI=%q, %d ResourceSlices for the node: GPU API %s",
		v1alpha1.LabelGPUAPI, label, ok, f.GPUNode.Status.GPUAPI, len(f.Slices), GPUAPIOf(f))
}
