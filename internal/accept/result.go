// Package accept is node-local acceptance: layers of checks over a node's facts, each
// a pure function of (facts, policy), run in order into a Report.
package accept

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
)

// Layer is one acceptance layer.
type Layer string

// The layers, in the order they run.
const (
	LayerHost       Layer = "host"       // L0: what is pinned in the node image, firmware, kernel, topology, disk
	LayerHardware   Layer = "hardware"   // L1: GPUs and drivers
	LayerKubernetes Layer = "kubernetes" // L2: later (controller side)
	LayerContainer  Layer = "container"  // L3: later
	LayerFabric     Layer = "interconnect"
	// LayerPerformance (L4, with interconnect: layer 4 measures the devices)
	// compares measured bandwidth and throughput with the model's baseline.
	LayerPerformance Layer = "performance"
	LayerFrameworks  Layer = "frameworks" // L5: PyTorch on the GPUs
)

// Code is the short name used in output ("L0").
func (l Layer) Code() string {
	switch l {
	case LayerHost:
		return "L0"
	case LayerHardware:
		return "L1"
	case LayerKubernetes:
		return "L2"
	case LayerContainer:
		return "L3"
	case LayerFabric, LayerPerformance:
		return "L4"
	case LayerFrameworks:
		return "L5"
	}
	return "L?"
}

// NodeLocalLayers are the layers `gpunode accept` runs on a node by default: they read
// facts only and finish in well under a second.
var NodeLocalLayers = []Layer{LayerHost, LayerHardware}

// OnDemandLayers are node-local layers that run workloads on the GPUs (seconds to
// minutes): run only when named (--layers, or a policy's layers).
var OnDemandLayers = []Layer{LayerPerformance, LayerFrameworks}

// ParseLayer converts a user's spelling ("host", "L0", "hardware", "l1", "performance",
// "L4", "frameworks", "L5") into a Layer.
func ParseLayer(s string) (Layer, error) {
	for _, l := range append(append([]Layer{}, NodeLocalLayers...), OnDemandLayers...) {
		if s == string(l) || strings.EqualFold(s, l.Code()) {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown layer %q (want one of: host (L0), hardware (L1), performance (L4), frameworks (L5))", s)
}

// Status is a check's verdict.
type Status string

// Statuses, from best to worst. A skip always carries its reason in Message.
const (
	StatusPass Status = "pass"
	StatusSkip Status = "skip"
	StatusWarn Status = "warn"
	StatusFail Status = "fail"
)

func (s Status) rank() int {
	switch s {
	case StatusPass:
		return 0
	case StatusSkip:
		return 1
	case StatusWarn:
		return 2
	case StatusFail:
		return 3
	}
	return 3
}

// Worse returns the worse of two statuses.
func Worse(a, b Status) Status {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// Result is one check's outcome.
type Result struct {
	ID      string `json:"id"`
	Layer   Layer  `json:"layer"`
	Title   string `json:"title"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	// Evidence: the facts the verdict rests on, one line each (per GPU where it applies).
	Evidence []string `json:"evidence,omitempty"`
	// Fix: what a person should do when the check does not pass.
	Fix string `json:"fix,omitempty"`
	// GPUs is each GPU's part in a per-GPU check (empty for node-level checks).
	GPUs []GPUResult `json:"gpus,omitempty"`
	// Measurements are the measured values of a performance check, with their baseline.
	Measurements []Measurement `json:"measurements,omitempty"`
}

// GPUResult is one GPU's verdict inside a check, naming the GPU the ways a person finds it:
// the index nvidia-smi shows, the UUID, the serial on its label and its PCI address.
type GPUResult struct {
	Index   int    `json:"index"`
	UUID    string `json:"uuid"`
	Serial  string `json:"serial,omitempty"`
	BusID   string `json:"busId,omitempty"`
	Status  Status `json:"status"`
	Message string `json:"message"`
}

// GPUResultOf is a device's identity with its verdict.
func GPUResultOf(d *gpu.Device, st Status, msg string) GPUResult {
	return GPUResult{Index: d.Index, UUID: d.UUID, Serial: d.Serial, BusID: d.PCI.BusID, Status: st, Message: msg}
}

// Summary counts results by status.
type Summary struct {
	Pass int `json:"pass"`
	Warn int `json:"warn"`
	Fail int `json:"fail"`
	Skip int `json:"skip"`
}

// Add counts one status.
func (s *Summary) Add(st Status) {
	switch st {
	case StatusPass:
		s.Pass++
	case StatusWarn:
		s.Warn++
	case StatusFail:
		s.Fail++
	case StatusSkip:
		s.Skip++
	}
}

// plural writes "1 GPU" or "8 GPUs".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// allOf writes "the only GPU" or "all 8 GPUs".
func allOf(n int, noun string) string {
	if n == 1 {
		return "the only " + noun
	}
	return fmt.Sprintf("all %d %ss", n, noun)
}
