package deviceplugin

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/labels"
)

// MIGResourcePrefix names the mixed strategy's resources: nvidia.com/mig-<profile>.
const MIGResourcePrefix = "nvidia.com/mig-"

// ReplicaSeparator joins a device's ID and its replica number: <uuid>::<n>.
const ReplicaSeparator = "::"

// Device is one device advertised to the kubelet: a whole GPU, a MIG device, or a
// time-slicing replica of either.
type Device struct {
	// ID is the kubelet's device ID: the GPU's or MIG device's UUID, with ::<n> for a replica.
	ID string
	// GPU is the GPU the device is on; its health is the device's health.
	GPU gpu.Device
	// MIG is the MIG device; nil for a whole GPU.
	MIG *gpu.MIGDevice
	// Replica is the replica number, -1 when the device is not replicated.
	Replica int
}

// Target is the UUID the container is given: the MIG device's, else the GPU's.
func (d Device) Target() string {
	if d.MIG != nil {
		return d.MIG.UUID
	}
	return d.GPU.UUID
}

// order sorts devices by GPU index, MIG index, replica.
func (d Device) order(o Device) int {
	mi, mo := -1, -1
	if d.MIG != nil {
		mi = d.MIG.Index
	}
	if o.MIG != nil {
		mo = o.MIG.Index
	}
	return cmp.Or(cmp.Compare(d.GPU.Index, o.GPU.Index), cmp.Compare(mi, mo), cmp.Compare(d.Replica, o.Replica))
}

// Resource is one extended resource and its devices; one plugin serves it.
type Resource struct {
	Name    string
	Devices []Device
	// Replicas is how many devices each GPU or MIG device is advertised as (1: not shared).
	Replicas int
	// FailRequestsGreaterThanOne refuses requests for more than one replica.
	FailRequestsGreaterThanOne bool
}

// Resources decides what is advertised for the GPUs under the sharing configuration:
//   - MIG none: every GPU whole as nvidia.com/gpu (a GPU in MIG mode too, as NVIDIA's
//     plugin does);
//   - MIG single: when any GPU is in MIG mode, every GPU must be, with MIG devices of one
//     profile, each advertised as nvidia.com/gpu; with none in MIG mode, whole GPUs;
//   - MIG mixed: GPUs not in MIG mode as nvidia.com/gpu, each MIG device as
//     nvidia.com/mig-<profile>;
//
// then each resource named in the time-slicing configuration is replicated. GPUs without a
// UUID and GPUs whose MIG devices could not be read are left out. The resources come
// sorted by name; the devices by GPU, MIG device and replica.
func Resources(devs []gpu.Device, s Sharing) ([]Resource, error) {
	byName := map[string][]Device{}
	add := func(name string, d Device) { byName[name] = append(byName[name], d) }
	var usable []gpu.Device
	for _, d := range devs {
		if d.UUID != "" && d.Err(gpu.FieldUUID) == nil {
			usable = append(usable, d)
		}
	}
	switch s.MIGStrategy {
	case MIGSingle:
		if err := checkSingle(usable); err != nil {
			return nil, err
		}
		for _, d := range usable {
			if !d.MIG.Enabled {
				add(ResourceName, Device{ID: d.UUID, GPU: d, Replica: -1})
			}
			for i := range d.MIGDevices {
				add(ResourceName, Device{ID: d.MIGDevices[i].UUID, GPU: d, MIG: &d.MIGDevices[i], Replica: -1})
			}
		}
	case MIGMixed:
		for _, d := range usable {
			if !d.MIG.Enabled {
				add(ResourceName, Device{ID: d.UUID, GPU: d, Replica: -1})
				continue
			}
			if d.Err(gpu.FieldMIG) != nil {
				continue
			}
			for i := range d.MIGDevices {
				m := &d.MIGDevices[i]
				add(MIGResourcePrefix+m.Profile, Device{ID: m.UUID, GPU: d, MIG: m, Replica: -1})
			}
		}
	case "", MIGNone:
		for _, d := range usable {
			add(ResourceName, Device{ID: d.UUID, GPU: d, Replica: -1})
		}
	default:
		return nil, fmt.Errorf("device plugin: MIG strategy %q: want none, single or mixed", s.MIGStrategy)
	}
	return replicate(byName, s.TimeSlicing), nil
}

// checkSingle refuses a node the single strategy cannot describe.
func checkSingle(devs []gpu.Device) error {
	inMIG := slices.ContainsFunc(devs, func(d gpu.Device) bool { return d.MIG.Enabled })
	if !inMIG {
		return nil
	}
	profile := ""
	for _, d := range devs {
		if !d.MIG.Enabled {
			return fmt.Errorf("device plugin: MIG strategy single: GPU %d is not in MIG mode while others are (use mixed)", d.Index)
		}
		if e := d.Err(gpu.FieldMIG); e != nil {
			return fmt.Errorf("device plugin: MIG strategy single: GPU %d: MIG devices unreadable: %s", d.Index, e.Message)
		}
		for _, m := range d.MIGDevices {
			if profile == "" {
				profile = m.Profile
			}
			if m.Profile != profile {
				return fmt.Errorf("device plugin: MIG strategy single: GPU %d has MIG profile %s besides %s (use mixed)", d.Index, m.Profile, profile)
			}
		}
	}
	return nil
}

// replicate applies time-slicing and sorts the result.
func replicate(byName map[string][]Device, ts TimeSlicing) []Resource {
	out := make([]Resource, 0, len(byName))
	for name, devs := range byName {
		r := Resource{Name: name, Devices: devs, Replicas: 1}
		i := slices.IndexFunc(ts.Resources, func(x Replicated) bool { return x.Name == name })
		if i >= 0 && ts.Resources[i].Replicas > 1 {
			rep := ts.Resources[i]
			r.Replicas, r.FailRequestsGreaterThanOne = rep.Replicas, ts.FailRequestsGreaterThanOne
			switch {
			case rep.Rename != "":
				r.Name = rep.Rename
			case ts.RenameByDefault:
				r.Name = name + ".shared"
			}
			r.Devices = make([]Device, 0, len(devs)*rep.Replicas)
			for _, d := range devs {
				for n := range rep.Replicas {
					c := d
					c.ID, c.Replica = d.ID+ReplicaSeparator+strconv.Itoa(n), n
					r.Devices = append(r.Devices, c)
				}
			}
		}
		slices.SortFunc(r.Devices, Device.order)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Resource) int {
		return cmp.Or(cmp.Compare(rank(a.Name), rank(b.Name)), strings.Compare(a.Name, b.Name))
	})
	return out
}

// rank puts nvidia.com/gpu first.
func rank(name string) int {
	if name == ResourceName {
		return 0
	}
	return 1
}

// LabelConfig is the GPU Feature Discovery label configuration that matches this sharing
// configuration (labels nvidia.com/gpu.replicas, gpu.sharing-strategy and the product's
// -SHARED suffix).
func (s Sharing) LabelConfig() labels.Config {
	c := labels.Config{MIGStrategy: s.MIGStrategy}
	for _, r := range s.TimeSlicing.Resources {
		if r.Name == ResourceName && r.Replicas > 1 {
			c.Sharing = labels.Sharing{Strategy: labels.SharingTimeSlicing, Replicas: r.Replicas,
				Renamed: r.Rename != "" || s.TimeSlicing.RenameByDefault}
		}
	}
	return c
}

// socketName is the plugin socket of a resource: gpunode-gpu.sock for nvidia.com/gpu,
// gpunode-mig-1g.10gb.sock, gpunode-<domain>-<name>.sock for a renamed one.
func socketName(resource string) string {
	if resource == ResourceName {
		return DefaultSocket
	}
	name, found := strings.CutPrefix(resource, "nvidia.com/")
	if !found {
		name = strings.ReplaceAll(resource, "/", "-")
	}
	return "gpunode-" + name + ".sock"
}
