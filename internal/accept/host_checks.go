package accept

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/host"
)

// hostChecks is layer L0: what the node image pins, firmware and BIOS,
// kernel and drivers, runtime and CDI, kubelet reservations, CPU/NUMA,
// local disk and shared memory.
func hostChecks() []Check {
	return append(hostImageChecks(), hostResourceChecks()...)
}

func hostImageChecks() []Check {
	return []Check{
		{ID: "host.os", Layer: LayerHost, Title: "OS release identified", Fix: "the node image must ship /etc/os-release", Run: checkOS},
		{ID: "host.kernel", Layer: LayerHost, Title: "kernel in the version matrix",
			Fix: "boot a kernel the policy's versions.kernel allows (and that the driver supports)", Run: checkKernel},
		{ID: "host.firmware", Layer: LayerHost, Title: "platform and BIOS identified",
			Fix: "record the BIOS version in the node image's inventory; compare it with the vendor's supported combination", Run: checkFirmware},
		{ID: "host.iommu", Layer: LayerHost, Title: "IOMMU as the policy requires",
			Fix: "set intel_iommu=on / amd_iommu=on (and iommu=pt for passthrough) on the kernel command line, per the platform's reference", Run: checkIOMMU},
		{ID: "host.cgroup", Layer: LayerHost, Title: "cgroup version", Fix: "boot with the unified hierarchy (systemd.unified_cgroup_hierarchy=1)", Run: checkCgroup},
		{ID: "host.secure-boot", Layer: LayerHost, Title: "Secure Boot matches the driver signing policy",
			Fix: "align Secure Boot with the driver's module signing: sign the NVIDIA modules (DKMS/MOK) or change the firmware setting", Run: checkSecureBoot},
		{ID: "host.smt", Layer: LayerHost, Title: "SMT as the policy requires", Fix: "set SMT in the BIOS or with nosmt on the kernel command line", Run: checkSMT},
		{ID: "host.time-sync", Layer: LayerHost, Title: "clock synchronized",
			Fix: "enable chrony or systemd-timesyncd; unsynchronized clocks break certificates, logs and distributed training", Run: checkTimeSync},
		{ID: "host.containerd", Layer: LayerHost, Title: "containerd version and NVIDIA runtime",
			Fix: "install the NVIDIA container toolkit and configure containerd (`nvidia-ctk runtime configure --runtime=containerd`) or enable CDI", Run: checkContainerd},
		{ID: "host.cdi", Layer: LayerHost, Title: "CDI specs valid and not stale",
			Fix: "regenerate the CDI spec (`nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml`) and delete stale ones", Run: checkCDI},
		{ID: "host.kubelet-reservations", Layer: LayerHost, Title: "kubelet reserves CPU and memory",
			Fix: "set kubeReserved, systemReserved and evictionHard in the kubelet config (seed: 1 CPU and 2Gi each, memory.available 1Gi)", Run: checkKubelet},
	}
}

// hostFacts gates a host check on the host facts and the named facts being readable.
// A missing file (Missing) skips; a read or parse error fails.
func hostFacts(f *Facts, facts ...host.Fact) (*host.Facts, *Verdict) {
	if f.HostErr != nil || f.Host == nil {
		v := skip("no host facts: %v", f.HostErr)
		return nil, &v
	}
	for _, k := range facts {
		if e := f.Host.Err(k); e != nil {
			var v Verdict
			if e.Missing {
				v = skip("%s not available on this host: %s", k, e.Message)
			} else {
				v = fail("cannot read %s: %s", k, e.Message)
			}
			return nil, &v
		}
	}
	return f.Host, nil
}

func checkOS(f *Facts, _ *Policy) Verdict {
	h, v := hostFacts(f, host.FactOSRelease)
	if v != nil {
		if v.Status == StatusSkip {
			v.Status = StatusFail // every supported image has os-release
		}
		return *v
	}
	name := h.OS.PrettyName
	if name == "" {
		name = strings.TrimSpace(h.OS.ID + " " + h.OS.VersionID)
	}
	return pass("%s", name)
}

func checkKernel(f *Facts, p *Policy) Verdict {
	h, v := hostFacts(f, host.FactKernelRelease)
	if v != nil {
		return *v
	}
	rel := h.Kernel.Release
	out := Verdict{Evidence: []string{"release " + rel, fmt.Sprintf("tainted 0x%x", h.Kernel.Tainted)}}
	if h.Kernel.Version != "" {
		out.Evidence = append(out.Evidence, h.Kernel.Version)
	}
	switch {
	case len(p.Versions.Kernel) == 0:
		out.Status, out.Message = StatusPass, rel+" (the policy pins no kernel versions)"
	case MatchAny(p.Versions.Kernel, rel):
		out.Status, out.Message = StatusPass, fmt.Sprintf("%s matches %s", rel, strings.Join(p.Versions.Kernel, " | "))
	default:
		out.Status, out.Message = StatusFail, fmt.Sprintf("%s is not in the version matrix (%s)", rel, strings.Join(p.Versions.Kernel, " | "))
	}
	return out
}

func checkFirmware(f *Facts, _ *Policy) Verdict {
	h, v := hostFacts(f)
	if v != nil {
		return *v
	}
	pl := h.Platform
	if pl.BIOSVersion == "" && pl.ProductName == "" {
		reason := "no DMI data (a VM without DMI tables?)"
		if e := h.Err(host.FactProductName); e != nil {
			reason = e.Message
		}
		return skip("platform not identified: %s", reason)
	}
	parts := []string{}
	if pl.SysVendor != "" || pl.ProductName != "" {
		parts = append(parts, strings.TrimSpace(pl.SysVendor+" "+pl.ProductName))
	}
	if pl.BIOSVersion != "" {
		parts = append(parts, "BIOS "+pl.BIOSVersion+" "+pl.BIOSDate)
	}
	return pass("%s", strings.TrimSpace(strings.Join(parts, ", ")))
}

func checkIOMMU(f *Facts, p *Policy) Verdict {
	h, v := hostFacts(f, host.FactCmdline)
	if v != nil {
		return *v
	}
	io := h.Boot.IOMMU
	mode := io.Mode
	if mode == "" {
		mode = "not configured"
	}
	msg := fmt.Sprintf("%s (%d IOMMU units, %d groups; cmdline %s)", mode, io.Units, io.Groups, orNone(strings.Join(io.Params, " ")))
	want := p.Host.IOMMU
	switch {
	case want == "any":
		return pass("%s", msg)
	case want == "enabled" && (io.Mode == host.IOMMUEnabled || io.Mode == host.IOMMUPassthrough):
		return pass("%s", msg)
	case want == io.Mode:
		return pass("%s", msg)
	}
	return fail("%s; policy wants %s", msg, want)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func checkCgroup(f *Facts, p *Policy) Verdict {
	h, v := hostFacts(f, host.FactCgroup)
	if v != nil {
		return *v
	}
	msg := fmt.Sprintf("cgroup v%d (%s)", h.Cgroup.Version, h.Cgroup.Mode)
	if p.Host.CgroupVersion != 0 && h.Cgroup.Version != p.Host.CgroupVersion {
		return fail("%s; policy wants v%d", msg, p.Host.CgroupVersion)
	}
	return pass("%s", msg)
}

func checkSecureBoot(f *Facts, p *Policy) Verdict {
	h, v := hostFacts(f, host.FactSecureBoot)
	if v != nil {
		return *v
	}
	st := h.SecureBoot.State
	// Kernel taint bit 13 (E): an unsigned module was loaded.
	unsigned := h.Kernel.Tainted&(1<<13) != 0
	if st == host.SecureBootEnabled && unsigned {
		return warn("Secure Boot enabled but an unsigned module is loaded (kernel taint E)")
	}
	switch p.Host.SecureBoot {
	case "any":
		return pass("%s", st)
	case st:
		return pass("%s", st)
	}
	if p.Host.SecureBoot == "disabled" && st == host.SecureBootNotEFI {
		return pass("%s (legacy BIOS boot: no Secure Boot)", st)
	}
	return fail("%s; policy wants %s", st, p.Host.SecureBoot)
}

func checkSMT(f *Facts, p *Policy) Verdict {
	h, v := hostFacts(f, host.FactSMT)
	if v != nil {
		return *v
	}
	st := onOff(h.CPU.SMT.Active)
	msg := fmt.Sprintf("SMT %s (control %s), %d CPUs online", st, orNone(h.CPU.SMT.Control), h.CPU.Online)
	if p.Host.SMT != "any" && p.Host.SMT != st {
		return fail("%s; policy wants %s", msg, p.Host.SMT)
	}
	return pass("%s", msg)
}

func checkTimeSync(f *Facts, p *Policy) Verdict {
	h, v := hostFacts(f, host.FactTimeSync)
	if v != nil {
		return *v
	}
	ts := h.TimeSync
	msg := fmt.Sprintf("%s via %s", ts.State, orNone(strings.Join(ts.Sources, ", ")))
	required := p.Host.TimeSync == nil || *p.Host.TimeSync
	switch {
	case ts.State == host.TimeSynchronized:
		return pass("%s", msg)
	case !required:
		return pass("%s (not required)", msg)
	case ts.State == host.TimeNotSynchronized:
		return fail("%s", msg)
	}
	return warn("%s (%s)", msg, orNone(ts.Evidence))
}
