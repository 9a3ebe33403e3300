package cli

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/host"
)

// hostSummary is the human view of the host facts, one line per topic.
func hostSummary(h *host.Facts) []string {
	osName := h.OS.PrettyName
	if osName == "" {
		osName = orDash(strings.TrimSpace(h.OS.ID + " " + h.OS.VersionID))
	}
	lines := []string{
		fmt.Sprintf("OS: %s  kernel: %s", osName, orDash(h.Kernel.Release)),
		fmt.Sprintf("Platform: %s  BIOS: %s", orDash(strings.TrimSpace(h.Platform.SysVendor+" "+h.Platform.ProductName)), orDash(h.Platform.BIOSVersion)),
		fmt.Sprintf("Boot: IOMMU %s  cgroup v%d  Secure Boot %s", orDash(h.Boot.IOMMU.Mode), h.Cgroup.Version, orDash(h.SecureBoot.State)),
		fmt.Sprintf("CPU: %d online, SMT %s, %d NUMA nodes", h.CPU.Online, onOffWord(h.CPU.SMT.Active), len(h.NUMANodes)),
		fmt.Sprintf("Memory: %d GiB, hugepages %d × %d KiB, /dev/shm %d MiB", h.Memory.TotalKiB>>20, h.Memory.HugePages.Total, h.Memory.HugePages.SizeKiB, h.SHM.SizeBytes>>20),
		fmt.Sprintf("Time sync: %s", orDash(h.TimeSync.State)),
	}
	ctr := "not installed"
	if h.Containerd.Installed {
		ctr = h.Containerd.Version
		if c := h.Containerd.Config; c != nil {
			ctr += fmt.Sprintf(" (nvidia runtime: %v, default %s)", c.NvidiaRuntime, orDash(c.DefaultRuntime))
		}
	}
	lines = append(lines, "containerd: "+ctr)
	lines = append(lines, fmt.Sprintf("CDI specs: %d in %s", len(h.CDI.Specs), strings.Join(h.CDI.Dirs, ", ")))
	for _, d := range h.Disks {
		if d.Error != nil {
			lines = append(lines, fmt.Sprintf("Disk %s %s: %s", d.Role, d.Path, d.Error.Message))
			continue
		}
		lines = append(lines, fmt.Sprintf("Disk %s %s: %d of %d GiB free", d.Role, d.Path, d.FreeBytes>>30, d.TotalBytes>>30))
	}
	if h.Kubelet.ConfigPath != "" {
		lines = append(lines, fmt.Sprintf("kubelet: %s kubeReserved %v systemReserved %v", h.Kubelet.ConfigPath, h.Kubelet.KubeReserved, h.Kubelet.SystemReserved))
	}
	for _, g := range h.GPUs {
		lines = append(lines, fmt.Sprintf("GPU %s: NUMA %d, local CPUs %s, link gen%d x%d of gen%d x%d", g.BusID, g.NUMANode, orDash(g.LocalCPUList), g.Link.Gen, g.Link.Width, g.Link.MaxGen, g.Link.MaxWidth))
	}
	return lines
}

func onOffWord(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
