package accept

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/rules"
	"github.com/gpunode/gpunode/internal/xid"
)

func hostResourceChecks() []Check {
	return []Check{
		{ID: "host.numa", Layer: LayerHost, Title: "each GPU has a NUMA node and local CPUs",
			Fix: "enable NUMA reporting in the BIOS (ACPI SRAT) so the kubelet's Topology Manager can place CPUs near GPUs", Run: checkNUMA},
		{ID: "host.pcie-sysfs", Layer: LayerHost, Title: "GPU PCIe links at full width (sysfs)",
			Fix: "a link narrower than the GPU's is a slot, riser or cable fault: reseat the GPU or its riser, or open a hardware ticket", Run: checkPCIeSysfs},
		{ID: "host.shm", Layer: LayerHost, Title: "/dev/shm large enough", Fix: "mount /dev/shm larger (tmpfs size=) in the node image; pods need a memory-backed emptyDir", Run: checkSHM},
		{ID: "host.hugepages", Layer: LayerHost, Title: "hugepages reserved", Fix: "reserve hugepages (hugepages= on the kernel command line or vm.nr_hugepages)", Run: checkHugepages},
		{ID: "host.disk", Layer: LayerHost, Title: "free space and inodes for images, kubelet and caches",
			Fix: "free space on the containerd root and cache folders (image garbage collection, cache eviction) or grow the disk", Run: checkDisks},
	}
}

func checkNUMA(f *Facts, p *Policy) Verdict {
	h, v := hostFacts(f)
	if v != nil {
		return *v
	}
	if len(h.GPUs) == 0 {
		return skip("no GPUs to place")
	}
	nodes := len(h.NUMANodes)
	out := Verdict{Status: StatusPass}
	bad, missing := 0, 0
	for _, g := range h.GPUs {
		if e, ok := gpuHostErr(g, host.FactGPUNUMA); ok {
			out.Evidence = append(out.Evidence, fmt.Sprintf("GPU %s at %s: %s", g.UUID, g.BusID, e.Message))
			if e.Missing {
				missing++
			} else {
				bad++
			}
			continue
		}
		out.Evidence = append(out.Evidence, fmt.Sprintf("GPU %s at %s: NUMA node %d, local CPUs %s", g.UUID, g.BusID, g.NUMANode, orNone(g.LocalCPUList)))
		if nodes > 1 && g.NUMANode < 0 && (p.Host.GPUNUMALocal == nil || *p.Host.GPUNUMALocal) {
			bad++
		}
	}
	switch {
	case missing == len(h.GPUs):
		return Verdict{Status: StatusSkip, Message: "no sysfs PCI device for the GPUs (simulated GPUs, or /sys not mounted)", Evidence: out.Evidence}
	case bad > 0:
		out.Status, out.Message = StatusFail, fmt.Sprintf("%d of %d GPUs have no NUMA node on a %d-node host", bad, len(h.GPUs), nodes)
	case nodes <= 1:
		out.Message = fmt.Sprintf("%s: every GPU is local", plural(nodes, "NUMA node"))
	default:
		out.Message = fmt.Sprintf("%s placed across %d NUMA nodes", plural(len(h.GPUs), "GPU"), nodes)
	}
	return out
}

func checkPCIeSysfs(f *Facts, _ *Policy) Verdict {
	h, v := hostFacts(f)
	if v != nil {
		return *v
	}
	if len(h.GPUs) == 0 {
		return skip("no GPUs")
	}
	out := Verdict{Status: StatusPass}
	missing := 0
	var fixes []string
	for i, g := range h.GPUs {
		r := hostGPUResult(f, i, g.UUID, g.BusID)
		if e, ok := gpuHostErr(g, host.FactGPULink); ok {
			out.Evidence = append(out.Evidence, fmt.Sprintf("GPU %s at %s: %s", g.UUID, g.BusID, e.Message))
			if e.Missing {
				missing++
				continue
			}
			r.Status, r.Message = StatusFail, "cannot read the link in sysfs: "+e.Message
			fixes = appendNew(fixes, "check that /sys is mounted and the GPU's PCI device is readable (`lspci -vv -s BUS_ID`)")
		} else {
			l := g.Link
			out.Evidence = append(out.Evidence, fmt.Sprintf("GPU %s at %s: gen%d x%d of gen%d x%d", g.UUID, g.BusID, l.Gen, l.Width, l.MaxGen, l.MaxWidth))
			r.Status, r.Message = StatusPass, fmt.Sprintf("gen%d x%d of gen%d x%d", l.Gen, l.Width, l.MaxGen, l.MaxWidth)
			switch {
			case l.Width < l.MaxWidth:
				r.Status, r.Message = StatusFail, fmt.Sprintf("gen%d x%d, narrower than its x%d", l.Gen, l.Width, l.MaxWidth)
				fixes = appendNew(fixes, rules.Fix(rules.CausePCIeLinkWidth, "", g.UUID))
			case l.Gen < l.MaxGen:
				r.Status, r.Message = StatusWarn, fmt.Sprintf("gen%d x%d, below gen%d (idle downtraining? recheck under load)", l.Gen, l.Width, l.MaxGen)
				fixes = appendNew(fixes, "rerun acceptance while the GPU is busy; a busy GPU below its generation is a BIOS setting or riser fault")
			}
		}
		out.GPUs = append(out.GPUs, r)
		out.Status = Worse(out.Status, r.Status)
	}
	switch {
	case missing == len(h.GPUs):
		return Verdict{Status: StatusSkip, Message: "no sysfs PCI device for the GPUs (simulated GPUs, or /sys not mounted)", Evidence: out.Evidence}
	case out.Status == StatusPass:
		out.Message = fmt.Sprintf("%s at full generation and width", plural(len(h.GPUs)-missing, "GPU link"))
	default:
		out.Message = BadGPUs(out.GPUs)
		out.Fix = strings.Join(fixes, "; ")
	}
	return out
}

// hostGPUResult names the i-th GPU of the host facts by the GPU backend's device of the same
// UUID or bus ID (index and serial), else by position.
func hostGPUResult(f *Facts, i int, uuid, busID string) GPUResult {
	if f.GPU != nil {
		for j := range f.GPU.Devices {
			d := &f.GPU.Devices[j]
			if (uuid != "" && d.UUID == uuid) || (busID != "" && xid.NormalizeBusID(d.PCI.BusID) == xid.NormalizeBusID(busID)) {
				return GPUResultOf(d, "", "")
			}
		}
	}
	return GPUResult{Index: i, UUID: uuid, BusID: busID}
}

func appendNew(ss []string, s string) []string {
	if s == "" || contains(ss, s) {
		return ss
	}
	return append(ss, s)
}

func checkSHM(f *Facts, p *Policy) Verdict {
	h, v := hostFacts(f, host.FactSHM)
	if v != nil {
		return *v
	}
	mib := h.SHM.SizeBytes >> 20
	if !h.SHM.Mounted {
		return fail("/dev/shm is not mounted")
	}
	if mib < p.Host.MinShmMiB {
		return fail("/dev/shm %d MiB, policy wants at least %d MiB", mib, p.Host.MinShmMiB)
	}
	return pass("/dev/shm %d MiB (%s)", mib, h.SHM.FSType)
}

func checkHugepages(f *Facts, p *Policy) Verdict {
	h, v := hostFacts(f, host.FactMemory)
	if v != nil {
		return *v
	}
	hp := h.Memory.HugePages
	msg := fmt.Sprintf("%d hugepages of %d KiB (%d free)", hp.Total, hp.SizeKiB, hp.Free)
	if hp.Total < uint64(p.Host.MinHugepages) {
		return fail("%s; policy wants at least %d", msg, p.Host.MinHugepages)
	}
	return pass("%s", msg)
}

func checkDisks(f *Facts, p *Policy) Verdict {
	h, v := hostFacts(f)
	if v != nil {
		return *v
	}
	out := Verdict{Status: StatusPass}
	var problems []string
	checked := 0
	for _, d := range h.Disks {
		if d.Error != nil {
			out.Evidence = append(out.Evidence, fmt.Sprintf("%s %s: %s", d.Role, d.Path, d.Error.Message))
			if !d.Error.Missing || d.Role == host.DiskCache {
				problems = append(problems, fmt.Sprintf("%s %s unreadable", d.Role, d.Path))
			}
			continue
		}
		checked++
		freePct := pct(d.FreeBytes, d.TotalBytes)
		inodePct := pct(d.FreeInodes, d.TotalInodes)
		out.Evidence = append(out.Evidence, fmt.Sprintf("%s %s (%s on %s): %d%% free of %d GiB, %d%% inodes free",
			d.Role, d.Path, d.FSType, d.MountPoint, freePct, d.TotalBytes>>30, inodePct))
		if freePct < p.Host.MinFreePercent {
			problems = append(problems, fmt.Sprintf("%s %s: %d%% free, below %d%%", d.Role, d.Path, freePct, p.Host.MinFreePercent))
		}
		if d.TotalInodes > 0 && inodePct < p.Host.MinFreeInodesPercent {
			problems = append(problems, fmt.Sprintf("%s %s: %d%% inodes free, below %d%%", d.Role, d.Path, inodePct, p.Host.MinFreeInodesPercent))
		}
	}
	switch {
	case len(problems) > 0:
		out.Status, out.Message = StatusFail, strings.Join(problems, "; ")
	case checked == 0:
		out.Status, out.Message = StatusSkip, "none of the containerd, kubelet or cache folders exists on this host"
	default:
		out.Message = fmt.Sprintf("%d folders above %d%% free space and %d%% free inodes", checked, p.Host.MinFreePercent, p.Host.MinFreeInodesPercent)
	}
	return out
}

func pct(free, total uint64) int {
	if total == 0 {
		return 100
	}
	return int(free * 100 / total)
}

// gpuHostErr returns the error of a per-GPU host fact; a GPU that is not on the PCI bus
// at all has every fact missing.
func gpuHostErr(g host.GPUHost, k host.Fact) (host.FactError, bool) {
	if e, ok := g.Errors[host.FactGPUAddress]; ok {
		return e, true
	}
	e, ok := g.Errors[k]
	return e, ok
}
