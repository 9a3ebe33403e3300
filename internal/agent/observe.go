package agent

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/labels"
	"github.com/gpunode/gpunode/internal/monitor"
)

// gather reads the node's facts: the GPU snapshot and the host facts, and with kernelLog the
// XIDs since boot (acceptance needs them; the periodic status does not). A source that
// fails becomes the fact's error, as in `gpunode accept`.
func (a *Agent) gather(ctx context.Context, kernelLog bool, opts host.Options) *accept.Facts {
	f := &accept.Facts{Node: a.cfg.NodeName}
	f.GPU, f.GPUErr = a.cfg.Backend.Snapshot(ctx)
	var devs []gpu.Device
	if f.GPU != nil {
		devs = f.GPU.Devices
	}
	switch hr, err := a.cfg.Host(devs); {
	case err != nil:
		f.HostErr = err
	default:
		f.Host, f.HostErr = hr.Read(ctx, opts, host.GPURefs(devs))
	}
	if kernelLog {
		if a.cfg.XIDs == nil {
			f.KernelLogErr = fmt.Errorf("kernel log not read by this agent")
		} else {
			f.XIDs, f.KernelLogErr = a.cfg.XIDs(ctx)
			a.splitCleared(f)
		}
	}
	return f
}

// nodeLabels are the GPU Feature Discovery labels (under cfg: the device plugin's MIG
// strategy and sharing) and the platform labels of the facts; none without GPU facts.
func nodeLabels(f *accept.Facts, m labels.Mapping, cfg labels.Config) map[string]string {
	out := map[string]string{}
	if f.GPU == nil {
		return out
	}
	node := labels.NodeInfo{}
	if f.Host != nil {
		node.Machine = f.Host.Platform.ProductName
	}
	for k, v := range labels.Discovery(f.GPU, node, cfg) {
		out[k] = v
	}
	for k, v := range labels.Platform(f.GPU, m) {
		out[k] = v
	}
	return out
}

// observedStatus is the part of GPUNode status the facts and the monitor decide: class,
// count, inventory, versions and health. It is pure.
func observedStatus(f *accept.Facts, lbls map[string]string, gpus []monitor.GPUHealth, kubelet string) v1alpha1.GPUNodeStatus {
	st := v1alpha1.GPUNodeStatus{AcceleratorClass: acceleratorClass(lbls)}
	st.Versions.Kubelet = cut(kubelet, 64)
	if f.Host != nil {
		st.Versions.Kernel = cut(f.Host.Kernel.Release, 128)
		if f.Host.Containerd.Installed {
			st.Versions.Containerd = cut(f.Host.Containerd.Version, 64)
		}
	}
	if f.GPU != nil {
		st.Versions.Driver = cut(f.GPU.Driver.Version, 64)
		st.Versions.CUDA = cut(f.GPU.Driver.CUDAVersion, 64)
		st.GPUCount = int32(len(f.GPU.Devices))
		for i := range f.GPU.Devices {
			if i == v1alpha1.MaxGPUs {
				break
			}
			st.Inventory.GPUs = append(st.Inventory.GPUs, gpuInfo(&f.GPU.Devices[i]))
		}
	}
	for i, g := range gpus {
		if i == v1alpha1.MaxGPUs {
			break
		}
		st.GPUHealth = append(st.GPUHealth, gpuHealth(g))
		st.Health = worse(st.Health, v1alpha1.Health(g.Health))
	}
	return st
}

// acceleratorClass is the node's accelerator class from its labels, within the API's limit.
func acceleratorClass(lbls map[string]string) string {
	return cut(lbls[labels.KeyAcceleratorClass], 63)
}

func gpuInfo(d *gpu.Device) v1alpha1.GPUInfo {
	g := v1alpha1.GPUInfo{
		Index: int32(d.Index), UUID: cut(d.UUID, 64), Serial: cut(d.Serial, 64), Model: cut(d.Name, 128),
		MemoryMiB: int64(min(d.Memory.TotalMiB, 1<<62)), PCIBusID: cut(d.PCI.BusID, 32), VBIOS: cut(d.VBIOS, 64),
	}
	if d.Err(gpu.FieldPCIeLink) == nil && d.PCI.LinkGen > 0 {
		g.PCIe = fmt.Sprintf("Gen%d x%d (max Gen%d x%d)", d.PCI.LinkGen, d.PCI.LinkWidth, d.PCI.LinkGenMax, d.PCI.LinkWidthMax)
	}
	if n := len(d.NVLinks); n > 0 && d.Err(gpu.FieldNVLink) == nil {
		active := 0
		for _, l := range d.NVLinks {
			if l.Active {
				active++
			}
		}
		g.NVLinks = &v1alpha1.NVLinkCount{Total: int32(min(n, 64)), Active: int32(min(active, 64))}
	}
	return g
}

func gpuHealth(g monitor.GPUHealth) v1alpha1.GPUHealth {
	out := v1alpha1.GPUHealth{
		Index: int32(g.Index), UUID: cut(g.UUID, 64), Health: v1alpha1.Health(g.Health),
		Action: v1alpha1.Action(g.Action), Since: metav1.NewTime(g.Since), AwaitingCheck: g.AwaitingCheck,
		MoreCauses: int32(g.MoreCauses),
	}
	if out.Health == "" {
		out.Health = v1alpha1.HealthHealthy
	}
	if out.Action == "" {
		out.Action = "none"
	}
	for i, c := range g.Causes {
		if i == v1alpha1.MaxCauses {
			out.MoreCauses += int32(len(g.Causes) - i)
			break
		}
		out.Causes = append(out.Causes, cut(c, 128))
	}
	return out
}

// worse returns the worse of two healths ("" is better than any).
func worse(a, b v1alpha1.Health) v1alpha1.Health {
	rank := map[v1alpha1.Health]int{v1alpha1.HealthHealthy: 1, v1alpha1.HealthDegraded: 2, v1alpha1.HealthUnhealthy: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// healthCondition is the GPUHealthy condition for the facts and health.
func healthCondition(f *accept.Facts, st *v1alpha1.GPUNodeStatus, gen int64) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionGPUHealthy, ObservedGeneration: gen}
	switch {
	case f.GPU == nil:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, "GPUsUnreadable", cut(fmt.Sprint("the GPUs cannot be read: ", f.GPUErr), 32768)
	case st.Health == v1alpha1.HealthUnhealthy:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "Unhealthy", countHealth(st, v1alpha1.HealthUnhealthy)+" unhealthy"
	case st.Health == v1alpha1.HealthDegraded:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, "Degraded", countHealth(st, v1alpha1.HealthDegraded)+" degraded"
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, "Healthy", fmt.Sprintf("%d GPUs, none unhealthy", st.GPUCount)
	}
	return c
}

func countHealth(st *v1alpha1.GPUNodeStatus, h v1alpha1.Health) string {
	n := 0
	for _, g := range st.GPUHealth {
		if g.Health == h {
			n++
		}
	}
	return fmt.Sprintf("%d of %d GPUs", n, len(st.GPUHealth))
}
