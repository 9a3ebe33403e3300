package doctor

import (
	"fmt"
	"strings"
)

const toolkitFix = "configure containerd with the NVIDIA container toolkit (`nvidia-ctk runtime configure --runtime=containerd` then restart containerd), or enable CDI and generate a spec"

func toolkitProbes(f Facts) []Probe {
	if f.HostErr != nil || f.Host == nil {
		return []Probe{{Name: "containerd", Status: Warn, Detail: fmt.Sprintf("no host facts: %v", f.HostErr)}}
	}
	h := f.Host
	c := h.Containerd
	rt := Probe{Name: "containerd runtime", Command: "grep -A3 nvidia /etc/containerd/config.toml"}
	switch {
	case !c.Installed:
		rt.Status, rt.Detail = Warn, "containerd is not installed on this host: the runtime layer is not checked"
		return []Probe{rt}
	case c.Config == nil:
		rt.Status, rt.Detail = Broken, fmt.Sprintf("containerd %s: config not readable", c.Version)
		if e := h.Errors["containerd.config"]; e.Message != "" {
			rt.Detail += ": " + e.Message
		}
		rt.Cause, rt.Fix = "containerd has no readable config, so it has no NVIDIA runtime", toolkitFix
		return []Probe{rt}
	}
	cfg := c.Config
	cdiOn := cfg.EnableCDI != nil && *cfg.EnableCDI
	switch {
	case cfg.NvidiaRuntime:
		rt.Status, rt.Detail = OK, fmt.Sprintf("containerd %s, nvidia runtime (default: %v)", c.Version, cfg.NvidiaDefault)
	case cdiOn:
		rt.Status, rt.Detail = OK, fmt.Sprintf("containerd %s, CDI enabled", c.Version)
	default:
		rt.Status, rt.Detail = Broken, fmt.Sprintf("containerd %s has neither an nvidia runtime nor CDI (%s)", c.Version, cfg.Path)
		rt.Cause, rt.Fix = "the container toolkit did not patch containerd's config", toolkitFix
	}
	ps := []Probe{rt}
	if rt.Status == Broken {
		return ps
	}
	for _, r := range cfg.Runtimes {
		if !r.Nvidia || r.BinaryName == "" {
			continue
		}
		bin := Probe{Name: "runtime binary " + r.Name, Command: "ls -l " + r.BinaryName}
		if exists, known := f.RuntimeBinaryExists[r.BinaryName]; known && !exists {
			bin.Status, bin.Detail = Broken, r.BinaryName+" does not exist"
			bin.Cause, bin.Fix = "containerd points at an NVIDIA runtime that is not installed", "install the NVIDIA container toolkit (nvidia-container-runtime) or fix BinaryName"
		} else {
			bin.Status, bin.Detail = OK, r.BinaryName
		}
		ps = append(ps, bin)
		if bin.Status == Broken {
			return ps
		}
	}
	cdiP := Probe{Name: "CDI specs", Command: "find /etc/cdi /var/run/cdi -maxdepth 2 -type f"}
	var bad []string
	gpuSpec := false
	for _, s := range h.CDI.Specs {
		switch {
		case s.Error != "":
			bad = append(bad, s.Path+": "+s.Error)
		case len(s.Stale) > 0:
			bad = append(bad, fmt.Sprintf("%s is stale (%s %s does not exist)", s.Path, s.Stale[0].Kind, s.Stale[0].Missing))
		}
		if s.Kind == "nvidia.com/gpu" {
			gpuSpec = true
		}
	}
	switch {
	case len(bad) > 0:
		cdiP.Status, cdiP.Detail = Broken, strings.Join(bad, "; ")
		cdiP.Cause = "a CDI spec does not match the devices: containers would get wrong device paths"
		cdiP.Fix = "regenerate the spec (`nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml`) and remove stale ones"
	case cdiOn && !cfg.NvidiaRuntime && !gpuSpec:
		cdiP.Status, cdiP.Detail = Broken, "CDI is enabled but no spec defines nvidia.com/gpu devices"
		cdiP.Cause, cdiP.Fix = "nothing generated the CDI spec", "generate it: `nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml`"
	case len(h.CDI.Specs) == 0:
		cdiP.Status, cdiP.Detail = OK, "no CDI specs (the nvidia runtime injects devices)"
	default:
		cdiP.Status, cdiP.Detail = OK, fmt.Sprintf("%d valid specs, none stale", len(h.CDI.Specs))
	}
	return append(ps, cdiP)
}

func pluginProbes(f Facts) []Probe {
	sock := Probe{Name: "kubelet registration socket", Command: "ls -l " + f.KubeletDir + "/device-plugins/"}
	if f.KubeletDir == "" {
		sock.Status, sock.Detail = Warn, "no kubelet folder on this host: not a Kubernetes node (yet)"
		return []Probe{sock}
	}
	if !f.KubeletSocket {
		sock.Status, sock.Detail = Broken, f.KubeletDir+"/device-plugins/kubelet.sock does not exist"
		sock.Cause, sock.Fix = "the kubelet is not running, or runs with another root folder", "check `systemctl status kubelet` and its --root-dir"
		return []Probe{sock}
	}
	sock.Status, sock.Detail = OK, "kubelet.sock present"
	plug := Probe{Name: "GPU device plugin", Command: "ls " + f.KubeletDir + "/device-plugins/"}
	if len(f.PluginSockets) == 0 {
		plug.Status, plug.Detail = Broken, "no GPU device plugin socket registered with the kubelet"
		plug.Cause, plug.Fix = "the device plugin is not running on this node, so Allocatable has no nvidia.com/gpu", "check the device plugin pod on this node (`kubectl -n <ns> get pods -o wide --field-selector spec.nodeName=<node>`) and its logs"
	} else {
		plug.Status, plug.Detail = OK, strings.Join(f.PluginSockets, ", ")
	}
	pr := Probe{Name: "pod-resources socket", Status: OK, Detail: "present"}
	if !f.PodResourcesSock {
		pr.Status, pr.Detail = Warn, "no pod-resources socket: GPU metrics cannot be attributed to pods"
	}
	alloc := Probe{Name: "allocatable", Status: Skipped, Detail: "needs the Kubernetes API: the gpunode agent reports it in GPUNode status"}
	return []Probe{sock, plug, pr, alloc}
}

func telemetryProbes(f Facts) []Probe {
	p := Probe{Name: "metrics endpoint", Command: "curl -s " + f.ExporterURL}
	switch {
	case f.ExporterURL == "":
		p.Status, p.Detail = Skipped, "not probed (simulated GPUs, or --metrics-url \"\")"
	case f.ExporterErr != nil:
		p.Status, p.Detail = Warn, fmt.Sprintf("%s: %v", f.ExporterURL, f.ExporterErr)
		p.Fix = "run a GPU exporter on this node (dcgm-exporter, or gpunode's exporter) if the node should be monitored"
	case !f.ExporterHasGPUMetrics:
		p.Status, p.Detail = Broken, f.ExporterURL+" answers but has no DCGM_FI_DEV_* GPU metrics"
		p.Cause, p.Fix = "the exporter runs but cannot read the GPUs", "read the exporter's log; it needs the driver (layer 1) and access to /dev/nvidia*"
	default:
		p.Status, p.Detail = OK, f.ExporterURL+" serves GPU metrics"
	}
	return []Probe{p}
}
