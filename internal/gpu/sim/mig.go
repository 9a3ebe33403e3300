package sim

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/gpunode/gpunode/internal/gpu"
)

// migProfileRE is a MIG profile name: "[<c>c.]<g>g.<mem>gb", optionally "+me" or "+gfx".
var migProfileRE = regexp.MustCompile(`^(?:([1-7])c\.)?([1-7])g\.([1-9][0-9]{0,3})gb(?:\+me|\+gfx)?$`)

// maxMIGDevices is the most MIG devices a GPU has (seven 1g slices).
const maxMIGDevices = 7

// applyMIGDevices makes d's MIG devices from the profile names in a scenario's
// gpus[].mig.devices: one GPU instance per entry (ids from 1), one compute instance each
// (id 0), a UUID derived from the GPU's and the slot, the memory the name gives.
func applyMIGDevices(profiles []string, d *gpu.Device) *problem {
	if profiles == nil {
		return nil
	}
	if !d.MIG.Enabled {
		return &problem{"mig.devices", "MIG devices need mig.enabled: true"}
	}
	if len(profiles) > maxMIGDevices {
		return &problem{"mig.devices", fmt.Sprintf("%d MIG devices, at most %d", len(profiles), maxMIGDevices)}
	}
	d.MIGDevices = nil
	for i, p := range profiles {
		m := migProfileRE.FindStringSubmatch(p)
		if m == nil {
			return &problem{"mig.devices", fmt.Sprintf("MIG profile %q is not [<c>c.]<g>g.<mem>gb, e.g. 1g.10gb", p)}
		}
		gb, _ := strconv.ParseUint(m[3], 10, 64) // the pattern allows digits only
		h := identityHash(d.UUID+"\x00mig", i)
		d.MIGDevices = append(d.MIGDevices, gpu.MIGDevice{
			Index: i, UUID: formatUUID("MIG-", h[:16]), GPUInstance: i + 1, ComputeInstance: 0,
			Profile: p, MemoryMiB: gb * 1024,
		})
	}
	return nil
}
