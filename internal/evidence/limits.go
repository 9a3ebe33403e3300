package evidence

import (
	"fmt"
)

// File names of the sections, in the order of importance the total cap is shared out in
// (and the order of the archive, after the manifest).
const (
	FileNode     = "node.json"
	FileErrors   = "errors.json"
	FileFindings = "findings.json"
	FileKernel   = "kernel.json"
	FileGPU      = "gpu.json"
	FilePods     = "pods.json"
	FileHealth   = "health.json"
)

// sectionOrder is the order of importance: when the total cap is short, the later
// sections get what the earlier ones left.
var sectionOrder = []string{FileNode, FileErrors, FileFindings, FileKernel, FileGPU, FilePods, FileHealth}

// Limits are the bundle's size caps in bytes (of the uncompressed files; the compressed
// archive is smaller for any real content). A zero field takes DefaultLimits' value.
type Limits struct {
	Node     int64 `json:"node,omitempty" yaml:"node,omitempty"`
	Errors   int64 `json:"errors,omitempty" yaml:"errors,omitempty"`
	Findings int64 `json:"findings,omitempty" yaml:"findings,omitempty"`
	Kernel   int64 `json:"kernel,omitempty" yaml:"kernel,omitempty"`
	GPU      int64 `json:"gpu,omitempty" yaml:"gpu,omitempty"`
	Pods     int64 `json:"pods,omitempty" yaml:"pods,omitempty"`
	Health   int64 `json:"health,omitempty" yaml:"health,omitempty"`
	// Total caps the sum of all files but the manifest.
	Total int64 `json:"total,omitempty" yaml:"total,omitempty"`
}

// minCap is the smallest cap accepted: enough for an empty section and a short note.
const minCap = 64

// minTotal is the smallest total cap: every section's minimum.
const minTotal = minCap * 7

// DefaultLimits are sized for an 8-GPU node: a full snapshot of 8 GPUs is about 20 KiB
// of JSON, a kernel-log record about 150 bytes, so a bundle is typically tens of KiB and
// never more than 4 MiB uncompressed.
func DefaultLimits() Limits {
	return Limits{
		Node:     16 << 10,
		Errors:   64 << 10,
		Findings: 512 << 10,
		Kernel:   2 << 20,
		GPU:      2 << 20,
		Pods:     256 << 10,
		Health:   256 << 10,
		Total:    4 << 20,
	}
}

// withDefaults fills zero fields and checks the rest.
func (l Limits) withDefaults() (Limits, error) {
	d := DefaultLimits()
	for _, p := range []struct {
		name       string
		v          *int64
		def, least int64
	}{
		{FileNode, &l.Node, d.Node, minCap}, {FileErrors, &l.Errors, d.Errors, minCap},
		{FileFindings, &l.Findings, d.Findings, minCap}, {FileKernel, &l.Kernel, d.Kernel, minCap},
		{FileGPU, &l.GPU, d.GPU, minCap}, {FilePods, &l.Pods, d.Pods, minCap},
		{FileHealth, &l.Health, d.Health, minCap}, {"total", &l.Total, d.Total, minTotal},
	} {
		if *p.v == 0 {
			*p.v = p.def
		}
		if *p.v < p.least {
			return Limits{}, fmt.Errorf("evidence limit %s = %d bytes: below the minimum %d", p.name, *p.v, p.least)
		}
	}
	return l, nil
}

// capOf is the cap of a section by file name.
func (l Limits) capOf(name string) int64 {
	switch name {
	case FileNode:
		return l.Node
	case FileErrors:
		return l.Errors
	case FileFindings:
		return l.Findings
	case FileKernel:
		return l.Kernel
	case FileGPU:
		return l.GPU
	case FilePods:
		return l.Pods
	case FileHealth:
		return l.Health
	}
	return 0
}
