package evidence

import (
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/monitor"
)

// Contents is everything one bundle holds, before caps are applied.
type Contents struct {
	// Created is the bundle's time: in the manifest, the archive's mtimes and its name.
	Created time.Time
	Node    NodeFacts
	// Trigger is the finding the bundle is captured for.
	Trigger health.Finding
	// GPUs are the UUIDs of the affected GPUs; empty means the trigger's GPU, or every GPU
	// of the snapshots for a node-level trigger (see AffectedGPUs).
	GPUs []string
	// Findings are the node's findings (the trigger need not be repeated).
	Findings []health.Finding
	// Window is the kernel-log window captured in Kernel.
	Window Window
	// Kernel are the kernel-log records of Window, oldest first.
	Kernel []KernelRecord
	// Snapshots are full GPU snapshots, most important first (the one taken at capture).
	Snapshots []gpu.Snapshot
	// Pods are the containers on the affected GPUs.
	Pods []PodOnGPU
	// Health is the monitor's per-GPU health and counters.
	Health *HealthState
	// Errors are the sources that could not be read: source name -> error text.
	Errors map[string]string
}

// NodeFacts identify the node and the software the fault happened on.
type NodeFacts struct {
	Node     string `json:"node"`
	Hostname string `json:"hostname,omitempty"`
	// BootID is /proc/sys/kernel/random/boot_id: a reboot after the bundle changes it.
	BootID        string `json:"bootId,omitempty"`
	Kernel        string `json:"kernel,omitempty"`
	DriverVersion string `json:"driverVersion,omitempty"`
	CUDAVersion   string `json:"cudaVersion,omitempty"`
	// Backend is the GPU backend ("nvml" or "sim").
	Backend string `json:"backend,omitempty"`
	// Agent is the version of gpunode that wrote the bundle.
	Agent string `json:"agent,omitempty"`
}

// KernelRecord is one kernel-log record.
type KernelRecord struct {
	Time time.Time `json:"time"`
	// Seq is the record's /dev/kmsg sequence number (0 when the source has none).
	Seq uint64 `json:"seq,omitempty"`
	// Level is the syslog level (0 emergency ... 7 debug); -1 when unknown.
	Level int    `json:"level"`
	Text  string `json:"text"`
	// Lost > 0 reports that many records lost (ring-buffer overrun) before this point.
	Lost uint64 `json:"lost,omitempty"`
}

// Window is the span of kernel log captured around an event: [At-Before, At+After].
type Window struct {
	At     time.Time     `json:"at"`
	Before time.Duration `json:"before"`
	After  time.Duration `json:"after"`
}

// From is the window's first instant.
func (w Window) From() time.Time { return w.At.Add(-w.Before) }

// To is the window's last instant.
func (w Window) To() time.Time { return w.At.Add(w.After) }

// Contains reports whether t lies in the window (both ends included).
func (w Window) Contains(t time.Time) bool { return !t.Before(w.From()) && !t.After(w.To()) }

// PodOnGPU is one container holding one of the affected GPUs.
type PodOnGPU struct {
	GPU       string `json:"gpu"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Container string `json:"container,omitempty"`
}

// HealthState is the health monitor's view of the node at capture.
type HealthState struct {
	GPUs  []monitor.GPUHealth `json:"gpus"`
	Stats monitor.Stats       `json:"stats"`
}

// AffectedGPUs returns c.GPUs when set; else the trigger's GPU; else (a node-level trigger)
// every GPU of the first snapshot. The result is sorted and has no duplicates or blanks.
func (c Contents) AffectedGPUs() []string {
	var out []string
	switch {
	case len(c.GPUs) > 0:
		out = append(out, c.GPUs...)
	case c.Trigger.GPU != "":
		out = []string{c.Trigger.GPU}
	case len(c.Snapshots) > 0:
		for _, d := range c.Snapshots[0].Devices {
			out = append(out, d.UUID)
		}
	}
	return sortedSet(out)
}
