package record

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/host"
)

// hostTemplate fills the template fields that come from the host.
func hostTemplate(t *Template, h *host.Facts, hostErr error, serials, vbios []string) {
	gpuSerials := "GPU serials: " + orNA(strings.Join(nonEmpty(serials), ", "))
	gpuFW := "GPU VBIOS: " + orNA(strings.Join(vbios, ", "))
	if h == nil {
		reason := "no host facts"
		if hostErr != nil {
			reason += ": " + hostErr.Error()
		}
		t.HardwareSKUSerial = Field{Value: gpuSerials + "; platform: " + reason}
		t.Firmware = Field{Value: gpuFW + "; BIOS: " + reason}
		t.OSKernel = Field{NotApplicable: reason}
		t.ContainerdKubelet = Field{NotApplicable: reason}
		return
	}
	pl := h.Platform
	sku := strings.TrimSpace(pl.SysVendor + " " + pl.ProductName)
	if sku == "" {
		sku = "not identified (no DMI data)"
	}
	if pl.ProductSerial != "" {
		sku += " serial " + pl.ProductSerial
	}
	t.HardwareSKUSerial = Field{Value: fmt.Sprintf("%s; %s", sku, gpuSerials)}
	bios := "not identified (no DMI data)"
	if pl.BIOSVersion != "" {
		bios = strings.TrimSpace(pl.BIOSVersion + " " + pl.BIOSDate)
	}
	t.Firmware = Field{Value: fmt.Sprintf("BMC: not read (needs Redfish/IPMI, outside node-local acceptance); BIOS: %s; %s; NIC: not read", bios, gpuFW)}
	osName := h.OS.PrettyName
	if osName == "" {
		osName = orNA(strings.TrimSpace(h.OS.ID + " " + h.OS.VersionID))
	}
	t.OSKernel = Field{Value: fmt.Sprintf("%s / %s", osName, orNA(h.Kernel.Release))}
	ctr := "containerd not installed"
	if h.Containerd.Installed {
		ctr = "containerd " + orNA(h.Containerd.Version)
	}
	kub := "kubelet config not found"
	if h.Kubelet.ConfigPath != "" {
		kub = "kubelet config " + h.Kubelet.ConfigPath + " (version reported by the controller in layer L2)"
	}
	t.ContainerdKubelet = Field{Value: ctr + " / " + kub}
}

func orNA(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
