package accept

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpunode/gpunode/internal/host"
)

func checkContainerd(f *Facts, p *Policy) Verdict {
	h, v := hostFacts(f)
	if v != nil {
		return *v
	}
	c := h.Containerd
	if !c.Installed {
		if p.Host.NVIDIARuntime == "required" {
			return fail("containerd is not installed; the policy requires the NVIDIA runtime")
		}
		return skip("containerd is not installed on this host")
	}
	if e := h.Err(host.FactContainerdVersion); e != nil {
		return fail("containerd at %s: cannot read its version: %s", c.BinaryPath, e.Message)
	}
	out := Verdict{Evidence: []string{"binary " + c.BinaryPath, "version " + c.Version}}
	if len(p.Versions.Containerd) > 0 && !MatchAny(p.Versions.Containerd, c.Version) {
		out.Status, out.Message = StatusFail, fmt.Sprintf("containerd %s is not in the version matrix (%s)", c.Version, strings.Join(p.Versions.Containerd, " | "))
		return out
	}
	if p.Host.NVIDIARuntime == "ignore" {
		out.Status, out.Message = StatusPass, fmt.Sprintf("containerd %s (runtime not checked)", c.Version)
		return out
	}
	if e := h.Err(host.FactContainerdConfig); e != nil || c.Config == nil {
		msg := "no config"
		if e != nil {
			msg = e.Message
		}
		out.Status, out.Message = StatusFail, fmt.Sprintf("containerd %s: config not readable: %s", c.Version, msg)
		return out
	}
	cfg := c.Config
	for _, r := range cfg.Runtimes {
		out.Evidence = append(out.Evidence, fmt.Sprintf("runtime %q type %s binary %s nvidia=%v", r.Name, r.Type, orNone(r.BinaryName), r.Nvidia))
	}
	cdi := cfg.EnableCDI != nil && *cfg.EnableCDI
	switch {
	case cfg.NvidiaRuntime && cfg.NvidiaDefault:
		out.Status, out.Message = StatusPass, fmt.Sprintf("containerd %s, nvidia runtime is the default", c.Version)
	case cfg.NvidiaRuntime:
		out.Status, out.Message = StatusPass, fmt.Sprintf("containerd %s, nvidia runtime configured (default %s: pods need runtimeClassName: nvidia)", c.Version, orNone(cfg.DefaultRuntime))
	case cdi:
		out.Status, out.Message = StatusPass, fmt.Sprintf("containerd %s, CDI enabled (no nvidia runtime)", c.Version)
	default:
		out.Status, out.Message = StatusFail, fmt.Sprintf("containerd %s has neither an nvidia runtime nor CDI enabled (config %s)", c.Version, cfg.Path)
	}
	return out
}

func checkCDI(f *Facts, _ *Policy) Verdict {
	h, v := hostFacts(f, host.FactCDI)
	if v != nil {
		return *v
	}
	r := h.CDI
	out := Verdict{Status: StatusPass}
	var warnings []string
	failures := append([]string(nil), r.DirErrors...)
	for _, s := range r.Specs {
		switch {
		case s.Error != "":
			failures = append(failures, fmt.Sprintf("%s: %s", s.Path, s.Error))
			out.Evidence = append(out.Evidence, fmt.Sprintf("%s: invalid: %s", s.Path, s.Error))
		case len(s.Stale) > 0:
			var refs []string
			for _, st := range s.Stale {
				refs = append(refs, fmt.Sprintf("%s names %s %s which does not exist", orNone(s.Kind+"="+st.Device), st.Kind, st.Missing))
			}
			failures = append(failures, fmt.Sprintf("%s is stale: %s", s.Path, strings.Join(refs, "; ")))
			out.Evidence = append(out.Evidence, fmt.Sprintf("%s: %s, %d devices, STALE", s.Path, s.Kind, len(s.Devices)))
		default:
			out.Evidence = append(out.Evidence, fmt.Sprintf("%s: %s, %d devices (%s)", s.Path, s.Kind, len(s.Devices), strings.Join(s.Devices, ", ")))
		}
	}
	for _, d := range r.Duplicates {
		warnings = append(warnings, fmt.Sprintf("device %s defined in %s", d.Device, strings.Join(d.Files, " and ")))
	}
	switch {
	case len(failures) > 0:
		out.Status, out.Message = StatusFail, strings.Join(failures, "; ")
	case len(warnings) > 0:
		out.Status, out.Message = StatusWarn, "duplicate CDI devices: "+strings.Join(warnings, "; ")
	case len(r.Specs) == 0:
		out.Message = fmt.Sprintf("no CDI specs in %s (devices are injected by the runtime hook)", strings.Join(r.Dirs, ", "))
	default:
		checked := "checked against the GPUs present"
		if !r.UUIDsChecked {
			checked = "GPU UUIDs not checked: no GPU facts"
		}
		out.Message = fmt.Sprintf("%s valid, %s", plural(len(r.Specs), "CDI spec"), checked)
	}
	return out
}

func checkKubelet(f *Facts, p *Policy) Verdict {
	if p.Host.KubeletReservations == "ignore" {
		return skip("the policy ignores kubelet reservations (host.kubeletReservations: ignore)")
	}
	h, v := hostFacts(f, host.FactKubelet)
	if v != nil {
		if v.Status == StatusSkip && p.Host.KubeletReservations == "require" {
			v.Status = StatusFail
		}
		return *v
	}
	k := h.Kubelet
	out := Verdict{Evidence: []string{"config " + k.ConfigPath,
		"kubeReserved " + kv(k.KubeReserved), "systemReserved " + kv(k.SystemReserved), "evictionHard " + kv(k.EvictionHard),
		fmt.Sprintf("maxPods %d, cpuManagerPolicy %s, topologyManagerPolicy %s", k.MaxPods, orNone(k.CPUManagerPolicy), orNone(k.TopologyManagerPolicy))}}
	var missing []string
	for _, need := range []struct {
		name string
		m    map[string]string
		key  string
	}{
		{"kubeReserved.cpu", k.KubeReserved, "cpu"}, {"kubeReserved.memory", k.KubeReserved, "memory"},
		{"systemReserved.cpu", k.SystemReserved, "cpu"}, {"systemReserved.memory", k.SystemReserved, "memory"},
		{"evictionHard.memory.available", k.EvictionHard, "memory.available"},
	} {
		if need.m[need.key] == "" {
			missing = append(missing, need.name)
		}
	}
	if len(missing) == 0 {
		out.Status, out.Message = StatusPass, fmt.Sprintf("kubeReserved %s, systemReserved %s, evictionHard %s", kv(k.KubeReserved), kv(k.SystemReserved), kv(k.EvictionHard))
		return out
	}
	out.Status = StatusWarn
	if p.Host.KubeletReservations == "require" {
		out.Status = StatusFail
	}
	out.Message = fmt.Sprintf("%s does not set %s", k.ConfigPath, strings.Join(missing, ", "))
	return out
}

func kv(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return "{" + strings.Join(parts, ",") + "}"
}
