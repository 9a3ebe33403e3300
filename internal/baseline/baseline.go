// Package baseline holds the performance a healthy GPU of a given model is expected to
// reach: HBM copy bandwidth, FP32 and FP64 throughput and PCIe host↔device bandwidth.
// The built-in table is derived from vendor specifications (each row cites its source) and
// a YAML file overrides it, behind one Source interface. FleetBaselines computes what the
// fleet's accepted nodes of a model measure on a driver (their median) from
// AcceptanceRecords, and Compare judges a value against it and the node's previous one.
package baseline

import (
	"strings"
	"unicode"
)

// Metric is one measured quantity.
type Metric string

// The metrics a baseline may hold.
const (
	// HBMCopy is device-to-device copy bandwidth in GB/s (10^9 B/s), counting the bytes
	// read plus the bytes written.
	HBMCopy Metric = "hbm-copy"
	// FP32 is non-tensor single-precision FMA throughput in TFLOP/s.
	FP32 Metric = "fp32"
	// FP64 is non-tensor double-precision FMA throughput in TFLOP/s.
	FP64 Metric = "fp64"
	// PCIeH2D and PCIeD2H are pinned host→device and device→host copy bandwidth in GB/s.
	PCIeH2D Metric = "pcie-h2d"
	PCIeD2H Metric = "pcie-d2h"
)

// Metrics lists every metric in report order.
var Metrics = []Metric{HBMCopy, FP32, FP64, PCIeH2D, PCIeD2H}

// Unit is the metric's unit as printed.
func (m Metric) Unit() string {
	switch m {
	case FP32, FP64:
		return "TFLOP/s"
	}
	return "GB/s"
}

// Title is the metric's name for people.
func (m Metric) Title() string {
	switch m {
	case HBMCopy:
		return "HBM copy bandwidth (read + write)"
	case FP32:
		return "FP32 FMA throughput (non-tensor)"
	case FP64:
		return "FP64 FMA throughput (non-tensor)"
	case PCIeH2D:
		return "PCIe host-to-device bandwidth (pinned)"
	case PCIeD2H:
		return "PCIe device-to-host bandwidth (pinned)"
	}
	return string(m)
}

// Link is a PCIe link: generation and lane count.
type Link struct {
	Gen   int
	Width int
}

// Expected is what a healthy GPU of one model should reach.
type Expected struct {
	// Model is the row's display name ("H200 SXM").
	Model string
	// Values per metric; a metric absent here has no baseline from this source.
	Values map[Metric]float64
	// Origin says where the values come from: "built-in" (datasheet peak × achievable
	// fraction) or a file name.
	Origin string
	// Reference cites the specification or measurement behind the values.
	Reference string
}

// Source finds the expected values for a GPU model.
type Source interface {
	// Lookup returns the expected values for a GPU as the driver names it ("NVIDIA H200"),
	// whose PCIe link can reach link (the link's maximum, for PCIe metrics derived from
	// it); ok is false when the source knows nothing about the model.
	Lookup(model string, link Link) (e Expected, ok bool)
	// Name says what the source is, for the record ("built-in", a file, "fleet").
	Name() string
}

// Normalize reduces a model name to lowercase words without the vendor prefix and
// punctuation, so "NVIDIA A100-SXM4-80GB", "nvidia a100 sxm4 80gb" and "A100_SXM4_80GB"
// match.
func Normalize(model string) string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(model), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if w == "nvidia" || w == "tesla" {
			continue
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// pcieLaneGBps is the usable bandwidth of one lane per direction in GB/s after line
// coding (PCI-SIG base specifications: gen1/2 8b/10b, gen3-5 128b/130b, gen6 PAM4 with
// 242B/256B FLITs).
var pcieLaneGBps = map[int]float64{1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}

// PCIeTheoretical is the link's bandwidth per direction in GB/s after line coding; 0 for
// an unknown generation or width.
func PCIeTheoretical(l Link) float64 {
	if l.Width <= 0 {
		return 0
	}
	return pcieLaneGBps[l.Gen] * float64(l.Width)
}

// Row is one model's specification: peak values from the vendor's datasheet.
type Row struct {
	// Model is the display name.
	Model string
	// Names are the names drivers report for the model (matched after Normalize).
	Names []string
	// Peak values from the datasheet: HBM bandwidth in GB/s, FP32 and FP64 non-tensor
	// TFLOP/s. Zero means the datasheet gives none.
	HBMPeakGBps, FP32PeakTFLOPs, FP64PeakTFLOPs float64
	// Reference cites the datasheet.
	Reference string
}
