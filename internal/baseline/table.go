package baseline

import (
	"maps"
	"slices"
)

// Achievable fractions of a datasheet peak that a healthy GPU reaches in the tests gpunode
// runs. The built-in baseline of a metric is peak × fraction; the acceptance threshold
// (90% by default) then applies to that. docs/performance.md explains each choice.
const (
	// HBMCopyFraction: cuMemcpyDtoD on the H200 measured 4302.6 GB/s (read + write) against
	// the 4.8 TB/s datasheet peak, 0.896; published STREAM-style copies on A100 and H100
	// land between 0.83 and 0.91. 0.85 keeps a healthy GPU of each model above 100%.
	HBMCopyFraction = 0.85
	// ComputeFraction: an FMA-bound kernel reached 65.17 of 67 TFLOP/s FP32 on the H200
	// (0.97); boost clocks under a power or thermal cap are lower, so 0.90.
	ComputeFraction = 0.90
	// PCIeFraction: pinned copies reach 55.2-55.5 GB/s on the H200's gen5 x16 link (63.0
	// GB/s after line coding, 0.88); TLP headers and DMA descriptors cost 10-20%, so 0.80.
	PCIeFraction = 0.80
)

// entry is one model in a Table: absolute expected values.
type entry struct {
	model  string
	names  []string
	values map[Metric]float64
	// pcieFromLink: PCIe metrics without a value are derived from the GPU's link.
	pcieFromLink bool
	origin       string
	reference    string
}

// Table is a Source backed by a list of models: the built-in table, a file on top of it,
// or a fleet median.
type Table struct {
	name    string
	entries []*entry
	byName  map[string]*entry
}

// Name says what the table is.
func (t *Table) Name() string { return t.name }

// Lookup finds the model by its normalized driver name.
func (t *Table) Lookup(model string, link Link) (Expected, bool) {
	e, ok := t.byName[Normalize(model)]
	if !ok {
		return Expected{}, false
	}
	out := Expected{Model: e.model, Values: maps.Clone(e.values), Origin: e.origin, Reference: e.reference}
	if out.Values == nil {
		out.Values = map[Metric]float64{}
	}
	if e.pcieFromLink {
		if bw := PCIeTheoretical(link) * PCIeFraction; bw > 0 {
			for _, m := range []Metric{PCIeH2D, PCIeD2H} {
				if _, set := out.Values[m]; !set {
					out.Values[m] = bw
				}
			}
		}
	}
	return out, true
}

// Models lists the display names of the table's models, in table order.
func (t *Table) Models() []string {
	out := make([]string, 0, len(t.entries))
	for _, e := range t.entries {
		out = append(out, e.model)
	}
	return out
}

// newTable indexes entries by every normalized driver name; a later entry with the same
// name replaces the earlier one's claim on it.
func newTable(name string, entries []*entry) *Table {
	t := &Table{name: name, entries: entries, byName: map[string]*entry{}}
	for _, e := range entries {
		for _, n := range e.names {
			t.byName[Normalize(n)] = e
		}
	}
	return t
}

// clone copies the table deeply, so overrides do not change the original.
func (t *Table) clone(name string) *Table {
	entries := make([]*entry, 0, len(t.entries))
	for _, e := range t.entries {
		c := *e
		c.names = slices.Clone(e.names)
		c.values = maps.Clone(e.values)
		entries = append(entries, &c)
	}
	return newTable(name, entries)
}

// fromRow turns a datasheet row into the built-in expectation: peak × achievable fraction.
func fromRow(r Row) *entry {
	v := map[Metric]float64{}
	set := func(m Metric, peak, frac float64) {
		if peak > 0 {
			v[m] = peak * frac
		}
	}
	set(HBMCopy, r.HBMPeakGBps, HBMCopyFraction)
	set(FP32, r.FP32PeakTFLOPs, ComputeFraction)
	set(FP64, r.FP64PeakTFLOPs, ComputeFraction)
	return &entry{model: r.Model, names: slices.Clone(r.Names), values: v, pcieFromLink: true,
		origin: "built-in", reference: r.Reference}
}
