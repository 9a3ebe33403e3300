// Package doctor walks a GPU node's stack bottom-up:
// driver and GPUs, then container toolkit and CDI, then device plugin, then telemetry. It
// stops at the first broken layer, because a symptom in a higher layer is almost always
// caused by a lower one, and says the most likely cause and the fix. A single GPU that is
// broken (lost, a pending row remap, an XID that needs a reset) breaks layer 1 but does not
// stop the walk: the driver and the other GPUs still work, so the layers above are still
// worth checking. The GPUs are judged by the health monitor's rules (internal/health, the
// XID catalog of internal/xid). Diagnose is a pure function of facts gathered at the edges.
package doctor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/xid"
)

// Status of one probe.
type Status string

// Probe statuses.
const (
	OK      Status = "ok"
	Warn    Status = "warn"
	Broken  Status = "broken"
	Skipped Status = "skipped"
)

// Layer numbers and names.
var layerNames = map[int]string{1: "driver and GPUs", 2: "container toolkit and CDI", 3: "device plugin", 4: "telemetry"}

// LayerName names a layer.
func LayerName(n int) string { return layerNames[n] }

// Probe is one thing doctor looked at.
type Probe struct {
	Layer   int    `json:"layer"`
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Detail  string `json:"detail"`
	Cause   string `json:"cause,omitempty"`
	Fix     string `json:"fix,omitempty"`
	Command string `json:"command,omitempty"` // what a person would run to see it themselves
	// GPU is the GPU the probe judged, for a per-GPU probe; Findings are its faults.
	GPU      *GPURef   `json:"gpu,omitempty"`
	Findings []Finding `json:"findings,omitempty"`
}

// Schema is the Report's schema id (docs/doctor.md describes it).
const Schema = "gpunode.dev/doctor/v1"

// Report is the walk's outcome.
type Report struct {
	Schema string  `json:"schema"`
	Probes []Probe `json:"probes"`
	// BrokenLayer is the first broken layer, 0 when none; BrokenLayers every broken layer,
	// in order (more than one when a broken GPU did not stop the walk).
	BrokenLayer  int    `json:"brokenLayer"`
	BrokenLayers []int  `json:"brokenLayers,omitempty"`
	Verdict      string `json:"verdict"`
	Cause        string `json:"cause,omitempty"`
	Fix          string `json:"fix,omitempty"`
}

// Facts are what doctor looks at; the caller gathers them.
type Facts struct {
	// Modules is /proc/modules; ModulesErr when unreadable.
	Modules    string
	ModulesErr error
	// DriverVersionFile is /proc/driver/nvidia/version; empty when absent.
	DriverVersionFile string
	// DevNodes are the names under /dev that start with "nvidia".
	DevNodes []string
	// NVMLErr is nil when the management library initialised; GPUs is how many it saw.
	NVMLErr error
	GPUs    int
	// Snapshot is what the management library read of the GPUs (nil when it did not answer).
	Snapshot *gpu.Snapshot
	// KernelLog holds kernel-log messages (kernel facility) since boot; XIDs are the GPU
	// XID events in it, attributed to GPUs where the log says which.
	KernelLog    []string
	KernelLogErr error
	XIDs         []xid.Event
	// Host facts (containerd, CDI, Secure Boot, kernel taint); HostErr when unreadable.
	Host    *host.Facts
	HostErr error
	// RuntimeBinaryExists says whether each runtime binary the containerd config names exists.
	RuntimeBinaryExists map[string]bool
	// KubeletSocket: the kubelet's device-plugin registration socket exists.
	KubeletSocket    bool
	KubeletDir       string
	PluginSockets    []string
	PodResourcesSock bool
	// Exporter: the result of fetching the metrics endpoint (empty URL = not probed).
	ExporterURL           string
	ExporterErr           error
	ExporterHasGPUMetrics bool
}

// Diagnose walks the layers in order and stops at the first broken one.
func Diagnose(f Facts) Report {
	r := Report{Schema: Schema}
	stopped := 0 // the layer whose broken probe stops the walk
	for layer, probe := range []func(Facts) []Probe{driverProbes, toolkitProbes, pluginProbes, telemetryProbes} {
		n := layer + 1
		if stopped != 0 {
			r.Probes = append(r.Probes, Probe{Layer: n, Name: LayerName(n), Status: Skipped,
				Detail: "not checked: layer " + itoa(stopped) + " (" + LayerName(stopped) + ") is broken and everything above it depends on it"})
			continue
		}
		for _, p := range probe(f) {
			p.Layer = n
			r.Probes = append(r.Probes, p)
			if p.Status != Broken {
				continue
			}
			if r.BrokenLayer == 0 {
				r.BrokenLayer, r.Cause, r.Fix = n, p.Cause, p.Fix
			}
			if !slices.Contains(r.BrokenLayers, n) {
				r.BrokenLayers = append(r.BrokenLayers, n)
			}
			if p.GPU == nil {
				stopped = n
			}
		}
	}
	switch {
	case r.BrokenLayer != 0:
		r.Verdict = "layer " + itoa(r.BrokenLayer) + " (" + LayerName(r.BrokenLayer) + ") is broken"
		switch n := brokenGPUs(r.Probes); {
		case n == 1:
			r.Verdict += ": 1 GPU is broken"
		case n > 1:
			r.Verdict += fmt.Sprintf(": %d GPUs are broken", n)
		}
	case hasStatus(r.Probes, Warn):
		r.Verdict = "every layer works, with warnings"
	default:
		r.Verdict = "every layer works"
	}
	return r
}

func brokenGPUs(ps []Probe) int {
	n := 0
	for _, p := range ps {
		if p.Status == Broken && p.GPU != nil {
			n++
		}
	}
	return n
}

func hasStatus(ps []Probe, s Status) bool {
	for _, p := range ps {
		if p.Status == s {
			return true
		}
	}
	return false
}

func itoa(n int) string {
	return string(rune('0' + n))
}

// moduleLoaded reports whether /proc/modules lists the module.
func moduleLoaded(modules, name string) bool {
	for _, line := range strings.Split(modules, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return true
		}
	}
	return false
}
