package labels

import (
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
)

// Platform returns gpunode's vendor-neutral labels for the snapshot: accelerator class
// (from the mapping), vendor, family, count, memory in GiB and interconnect, plus
// accelerator-mixed=true when the GPUs fall into more than one class. It returns an empty
// map for a nil snapshot or one without devices.
//
// The class, family and memory describe the reference device (the lowest-index device
// whose name could be read) and the count is the number of devices of its class. Devices
// whose name could not be read take no part in the class labels; when no name could be
// read at all, only vendor and interconnect are published.
func Platform(snap *gpu.Snapshot, m Mapping) map[string]string {
	out := map[string]string{}
	if snap == nil || len(snap.Devices) == 0 {
		return out
	}
	out[KeyAcceleratorVendor] = vendorValue(snap.Driver.Vendor)
	out[KeyInterconnect] = interconnect(snap.Devices)

	var ref *gpu.Device
	var refClass string
	count, mixed := 0, false
	for i := range snap.Devices {
		d := &snap.Devices[i]
		if _, ok := deviceName(d); !ok {
			continue
		}
		class := m.Class(d)
		switch {
		case ref == nil:
			ref, refClass, count = d, class, 1
		case class == refClass:
			count++
		default:
			mixed = true
		}
	}
	if ref == nil {
		return keepValid(out)
	}
	out[KeyAcceleratorClass] = SanitizeValue(refClass)
	out[KeyAcceleratorCount] = strconv.Itoa(count)
	if family := platformFamily(ref); family != "" {
		out[KeyAcceleratorFamily] = family
	}
	if readable(ref, gpu.FieldMemory) && ref.Memory.TotalMiB > 0 {
		gib := ref.Memory.TotalMiB / 1024
		if ref.Memory.TotalMiB%1024 >= 512 {
			gib++
		}
		out[KeyAcceleratorMemoryGiB] = strconv.FormatUint(gib, 10)
	}
	if mixed {
		out[KeyAcceleratorMixed] = "true"
	}
	return keepValid(out)
}

// vendorValue is the lower-case vendor; empty means NVIDIA (both backends are NVIDIA's).
func vendorValue(vendor string) string {
	if v := strings.ToLower(SanitizeValue(vendor)); v != "" {
		return v
	}
	return "nvidia"
}

// platformFamily is the backend's architecture in lower case with spaces as "-" ("ada"
// is spelled "ada-lovelace", as GFD does), else GFD's family from the compute capability;
// "" when neither is known.
func platformFamily(d *gpu.Device) string {
	if readable(d, gpu.FieldArchitecture) {
		arch := strings.ToLower(SanitizeValue(d.Architecture))
		switch arch {
		case "", "unknown", "undefined":
		case "ada", "adalovelace", "ada_lovelace":
			return "ada-lovelace"
		default:
			return arch
		}
	}
	if cc := d.ComputeCapability; readable(d, gpu.FieldComputeCap) && cc.Major > 0 {
		if f := gfdFamily(cc.Major, cc.Minor); f != "undefined" {
			return f
		}
	}
	return ""
}

// interconnect is "nvlink" when every GPU has at least one active NVLink, else "pcie".
func interconnect(devices []gpu.Device) string {
	for i := range devices {
		d := &devices[i]
		if !readable(d, gpu.FieldNVLink) || !anyActive(d.NVLinks) {
			return InterconnectPCIe
		}
	}
	return InterconnectNVLink
}

func anyActive(links []gpu.NVLink) bool {
	for _, l := range links {
		if l.Active {
			return true
		}
	}
	return false
}
