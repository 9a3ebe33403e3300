package podresources

import (
	"cmp"
	"slices"
	"strings"
	"time"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Pod is one container that holds a device.
type Pod struct {
	Namespace string
	Name      string
	Container string
}

// DefaultResourceNames are the extended resources whose devices are attributed when
// Options.ResourceNames is empty: NVIDIA's device plugin's whole GPUs, its renamed
// time-sliced GPUs (renameByDefault), and every MIG profile (nvidia.com/mig-1g.10gb, ...).
// A name ending in "*" matches by prefix.
func DefaultResourceNames() []string {
	return []string{"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-*"}
}

// matcher decides whether a resource name's devices are attributed.
type matcher struct {
	exact    map[string]bool
	prefixes []string
}

func newMatcher(names []string) matcher {
	m := matcher{exact: make(map[string]bool, len(names))}
	for _, n := range names {
		if p, ok := strings.CutSuffix(n, "*"); ok {
			m.prefixes = append(m.prefixes, p)
			continue
		}
		m.exact[n] = true
	}
	return m
}

func (m matcher) match(resource string) bool {
	if m.exact[resource] {
		return true
	}
	for _, p := range m.prefixes {
		if strings.HasPrefix(resource, p) {
			return true
		}
	}
	return false
}

// deviceID strips the replica suffix NVIDIA's device plugin appends to a shared device
// (time-slicing and MPS advertise "GPU-<uuid>::3" for replica 3 of GPU-<uuid>).
func deviceID(raw string) string {
	base, replica, ok := strings.Cut(raw, "::")
	if !ok || replica == "" || strings.Trim(replica, "0123456789") != "" {
		return raw
	}
	return base
}

// legacyMIGParent returns the parent GPU of a MIG device named the way drivers before
// R470 named it, "MIG-GPU-<gpu uuid>/<gi>/<ci>"; "" for any other ID.
func legacyMIGParent(id string) string {
	rest, ok := strings.CutPrefix(id, "MIG-GPU-")
	if !ok {
		return ""
	}
	gpu, _, ok := strings.Cut(rest, "/")
	if !ok || gpu == "" {
		return ""
	}
	return "GPU-" + gpu
}

// keys returns the device ID a raw ID is filed under and, when it differs, the GPU that
// owns it (a MIG device's parent): parent is asked first, the legacy MIG name second.
func keys(raw string, parent func(string) (string, bool)) (id, gpu string) {
	id = deviceID(raw)
	if parent != nil {
		if g, ok := parent(id); ok && g != "" {
			gpu = g
		}
	}
	if gpu == "" {
		gpu = legacyMIGParent(id)
	}
	if gpu == id {
		gpu = ""
	}
	return id, gpu
}

// index maps each device ID (and each MIG device's parent GPU) to the containers holding
// it, sorted and without duplicates, and counts the pods that hold any matched device.
// Devices of resources m does not match are ignored. The devices of a container's DRA
// claims are attributed by the ID dra gives them (nil: DRA claims are ignored).
func index(pods []*podresourcesv1.PodResources, m matcher, parent func(string) (string, bool), dra DRADevice) (map[string][]Pod, int) {
	byDevice := map[string][]Pod{}
	attributed := 0
	for _, p := range pods {
		held := false
		for _, c := range p.GetContainers() {
			who := Pod{Namespace: p.GetNamespace(), Name: p.GetName(), Container: c.GetName()}
			for _, d := range c.GetDevices() {
				if !m.match(d.GetResourceName()) {
					continue
				}
				for _, raw := range d.GetDeviceIds() {
					id, gpu := keys(raw, parent)
					byDevice[id] = appendNew(byDevice[id], who)
					if gpu != "" {
						byDevice[gpu] = appendNew(byDevice[gpu], who)
					}
					held = true
				}
			}
			if dra == nil {
				continue
			}
			for _, dr := range c.GetDynamicResources() {
				for _, cr := range dr.GetClaimResources() {
					raw, ok := dra(cr.GetDriverName(), cr.GetPoolName(), cr.GetDeviceName())
					if !ok {
						continue
					}
					id, gpu := keys(raw, parent)
					byDevice[id] = appendNew(byDevice[id], who)
					if gpu != "" {
						byDevice[gpu] = appendNew(byDevice[gpu], who)
					}
					held = true
				}
			}
		}
		if held {
			attributed++
		}
	}
	for id, ps := range byDevice {
		slices.SortFunc(ps, comparePods)
		byDevice[id] = slices.Clip(ps) // callers appending to it get their own array
	}
	return byDevice, attributed
}

// DRADevice names the device ID (a GPU's or MIG device's UUID) of a device a DRA claim
// was allocated, by its driver, pool and name; false for a device not attributed.
type DRADevice func(driver, pool, device string) (id string, ok bool)

func appendNew(ps []Pod, p Pod) []Pod {
	if slices.Contains(ps, p) {
		return ps
	}
	return append(ps, p)
}

func comparePods(a, b Pod) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Container, b.Container))
}

// backoff is the wait before the next attempt after failures consecutive failed
// refreshes: base doubled per failure, never more than limit.
func backoff(failures int, base, limit time.Duration) time.Duration {
	if failures < 1 {
		return limit
	}
	d := base
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
