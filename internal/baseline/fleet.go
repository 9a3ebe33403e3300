package baseline

import (
	"fmt"
	"math"
	"slices"
)

// Median returns the median of xs (the mean of the two middle values for an even count)
// ignoring NaN and infinite values; ok is false when no finite value is left. xs is not
// changed.
func Median(xs []float64) (m float64, ok bool) {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	mid := len(v) / 2
	if len(v)%2 == 1 {
		return v[mid], true
	}
	return (v[mid-1] + v[mid]) / 2, true
}

// Sample is one GPU's measurements on one node, as an acceptance record holds them.
type Sample struct {
	Node   string
	Model  string
	Values map[Metric]float64
}

// Fleet builds a Source from many nodes' measurements: for each model (by normalized
// name) and metric, the median over the nodes that measured it. A node with several GPUs
// of the model counts once, with the median of its GPUs, so a big node does not outvote a
// small one. A model/metric seen on fewer than minNodes nodes has no fleet baseline (a
// lookup falls through to nothing for it: the caller keeps its other source).
func Fleet(samples []Sample, minNodes int) *Table {
	perNode := map[string]map[string]map[Metric][]float64{} // model -> node -> metric -> values
	display := map[string]string{}
	var order []string
	for _, s := range samples {
		k := Normalize(s.Model)
		if k == "" {
			continue
		}
		if perNode[k] == nil {
			perNode[k] = map[string]map[Metric][]float64{}
			display[k] = s.Model
			order = append(order, k)
		}
		if perNode[k][s.Node] == nil {
			perNode[k][s.Node] = map[Metric][]float64{}
		}
		for m, v := range s.Values {
			perNode[k][s.Node][m] = append(perNode[k][s.Node][m], v)
		}
	}
	var entries []*entry
	for _, k := range order {
		e := &entry{model: display[k], names: []string{display[k]}, values: map[Metric]float64{}}
		var nodes int
		for _, metric := range Metrics {
			var nodeMedians []float64
			for _, byMetric := range perNode[k] {
				if m, ok := Median(byMetric[metric]); ok {
					nodeMedians = append(nodeMedians, m)
				}
			}
			if len(nodeMedians) < max(1, minNodes) {
				continue
			}
			med, _ := Median(nodeMedians)
			e.values[metric] = med
			nodes = max(nodes, len(nodeMedians))
		}
		if len(e.values) == 0 {
			continue
		}
		e.origin = fmt.Sprintf("fleet median of %d nodes", nodes)
		e.reference = "acceptance records of the same model"
		entries = append(entries, e)
	}
	return newTable("fleet", entries)
}

// Chain is a Source that asks each source in turn and merges their answers: a metric
// takes its value from the first source that has one. Chain{fleet, file, builtIn} lets a
// fleet median replace the built-in value where the fleet has one.
type Chain []Source

// Name joins the sources' names.
func (c Chain) Name() string {
	var n string
	for i, s := range c {
		if i > 0 {
			n += " > "
		}
		n += s.Name()
	}
	return n
}

// Lookup merges the sources' answers, the first source's value winning per metric. The
// origin and reference are those of the first source that knew the model.
func (c Chain) Lookup(model string, link Link) (Expected, bool) {
	var out Expected
	found := false
	for _, s := range c {
		e, ok := s.Lookup(model, link)
		if !ok {
			continue
		}
		if !found {
			out = Expected{Model: e.Model, Values: map[Metric]float64{}, Origin: e.Origin, Reference: e.Reference}
			found = true
		}
		for m, v := range e.Values {
			if _, set := out.Values[m]; !set {
				out.Values[m] = v
			}
		}
	}
	return out, found
}
