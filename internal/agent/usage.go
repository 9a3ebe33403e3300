package agent

import (
	"context"
	"math"
	"strconv"
	"sync"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/podresources"
)

// maxGPUPods is the most pods status.gpuHealth[].pods lists (the API's MaxItems).
const maxGPUPods = 32

// maxPodKey is the longest "namespace/name" (a 63-byte namespace, "/", a 253-byte name).
const maxPodKey = 317

// PodSource says which pods hold each GPU: podresources.Cache, refreshed from the
// kubelet's pod-resources API in the background, implements it.
type PodSource interface {
	// PodsFor lists the containers holding the device with this ID (a GPU UUID; a MIG
	// device counts for its parent GPU when the source knows the parent).
	PodsFor(uuid string) []podresources.Pod
	// Stats describe the last refresh: whether the kubelet has been read at all.
	Stats() podresources.Stats
}

// usage is what runs on one GPU: the pods holding it and the processes on it.
type usage struct {
	// pods are "namespace/name", sorted, without duplicates; nil when not known.
	pods []string
	// processes is nil when the backend cannot say.
	processes *int32
}

// usageOf reads, for each GPU of devs, the pods holding it (when the pod source has been
// read) and the processes on it (when the backend lists processes). Neither source
// blocks on the kubelet: the pod source serves its last refresh.
func (a *Agent) usageOf(ctx context.Context, devs []gpu.Device) map[string]usage {
	out := map[string]usage{}
	pods := a.cfg.Pods != nil && podsKnown(a.cfg.Pods.Stats())
	pl, lists := a.cfg.Backend.(gpu.ProcessLister)
	for _, d := range devs {
		if d.UUID == "" {
			continue
		}
		var u usage
		if pods {
			u.pods = podKeys(a.cfg.Pods.PodsFor(d.UUID))
		}
		if lists {
			if procs, err := pl.Processes(ctx, d.UUID); err == nil {
				n := int32(min(len(procs), math.MaxInt32))
				u.processes = &n
			} else {
				a.cfg.Log.Debug("processes on a GPU not read", "node", a.cfg.NodeName, "gpu", d.UUID, "err", err)
			}
		}
		out[d.UUID] = u
	}
	return out
}

// podsKnown is true when the pod source serves a map read from the kubelet: a refresh
// succeeded and the last one did too, or the map it built is still kept across failures.
func podsKnown(s podresources.Stats) bool {
	return !s.LastSuccess.IsZero() && (s.Err == nil || s.Stale)
}

// podKeys are the pods of containers as "namespace/name", in the containers' order (the
// pod source sorts them), one entry per pod, at most maxGPUPods.
func podKeys(containers []podresources.Pod) []string {
	var out []string
	for _, c := range containers {
		key := cut(c.Namespace+"/"+c.Name, maxPodKey)
		if n := len(out); n > 0 && out[n-1] == key {
			continue
		}
		if len(out) == maxGPUPods {
			break
		}
		out = append(out, key)
	}
	return out
}

// withUsage sets pods and processes on each GPU of st that usage knows. It is pure.
func withUsage(st *v1alpha1.GPUNodeStatus, byUUID map[string]usage) {
	for i := range st.GPUHealth {
		g := &st.GPUHealth[i]
		if u, ok := byUUID[g.UUID]; ok {
			g.Pods, g.Processes = u.pods, u.processes
		}
	}
}

// parents maps device IDs that are not a GPU's UUID to that GPU's UUID, from the latest
// snapshot: MIG device UUIDs to their parent, and GPU indexes ("0", as NVIDIA's device
// plugin advertises them with deviceIDStrategy=index) to the GPU. The pod source then files
// a pod holding such a device under the GPU too. Safe for concurrent use (the pod source
// asks from its own goroutine).
type parents struct {
	mu sync.RWMutex
	m  map[string]string
}

// update replaces the map with the MIG devices of devs.
func (p *parents) update(devs []gpu.Device) {
	m := map[string]string{}
	for _, d := range devs {
		if d.UUID != "" {
			m[strconv.Itoa(d.Index)] = d.UUID
		}
		for _, mig := range d.MIGDevices {
			if mig.UUID != "" && d.UUID != "" {
				m[mig.UUID] = d.UUID
			}
		}
	}
	p.mu.Lock()
	p.m = m
	p.mu.Unlock()
}

// ParentGPU names the GPU that owns a device ID: a MIG device's parent, or the GPU of an
// index; ok is false for a GPU's own UUID or an ID not seen in the last snapshot. It is
// podresources.Options.ParentGPU.
func (a *Agent) ParentGPU(deviceID string) (gpuUUID string, ok bool) {
	a.parents.mu.RLock()
	defer a.parents.mu.RUnlock()
	gpuUUID, ok = a.parents.m[deviceID]
	return gpuUUID, ok
}
