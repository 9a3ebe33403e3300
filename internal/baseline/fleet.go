package baseline

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// DefaultMinSamples is the fewest accepted nodes of one model and driver version whose
// median the fleet baseline of a metric is: below it the fleet has no opinion.
const DefaultMinSamples = 3

// FleetBaseline is what the accepted nodes of one GPU model on one driver version measure.
type FleetBaseline struct {
	// Model is the model as the drivers name it (the first name in sort order when the
	// nodes counted spell it differently); Key is its normalized form.
	Model, Key string
	// DriverVersion is the driver the records were measured on.
	DriverVersion string
	// Nodes counts the accepted nodes whose latest record of this model and driver measured
	// anything.
	Nodes int
	// Metrics are the metrics measured on at least the minimum number of nodes, in report
	// order (then by name).
	Metrics []FleetMetric
}

// FleetMetric is one metric's fleet baseline: the median over nodes of each node's value
// (itself the median of the node's GPUs of the model), with its spread.
type FleetMetric struct {
	Metric Metric
	Unit   string
	Median float64
	// MAD is the median absolute deviation of the nodes' values from Median.
	MAD float64
	// Samples counts the nodes.
	Samples int
}

type fleetKey struct{ model, driver string }

type nodeKey struct {
	node string
	fleetKey
}

// latest is one node's latest record of one model and driver.
type latest struct {
	rec   *v1alpha1.AcceptanceRecord
	model *v1alpha1.ModelPerformance
}

// FleetBaselines computes the fleet baselines of every GPU model and driver version from
// acceptance records. Each node counts once per model and driver: with its latest record
// that measured that model on that driver (by finish time, then name), and only when that
// record passed, so a node whose latest run failed does not count. A metric needs
// minSamples nodes (at least 1). The result is sorted by model key, then driver version;
// records are not changed.
func FleetBaselines(records []v1alpha1.AcceptanceRecord, minSamples int) []FleetBaseline {
	minSamples = max(minSamples, 1)
	last := map[nodeKey]latest{}
	names := map[fleetKey][]string{}
	normalized := map[string]string{} // a fleet has few spellings of few models
	for i := range records {
		r := &records[i]
		for j := range r.Spec.Performance {
			mp := &r.Spec.Performance[j]
			key, ok := normalized[mp.Model]
			if !ok {
				key = Normalize(mp.Model)
				normalized[mp.Model] = key
			}
			k := nodeKey{r.Spec.Node, fleetKey{key, r.Spec.Stack.DriverVersion}}
			if prev, ok := last[k]; ok && !later(r, prev.rec) {
				continue
			}
			last[k] = latest{r, mp}
		}
	}
	type metricKey struct {
		fleetKey
		metric string
	}
	values := map[metricKey][]float64{}
	units := map[metricKey]string{}
	nodes := map[fleetKey]int{}
	for k, l := range last {
		if l.rec.Spec.Result != v1alpha1.AcceptancePassed {
			continue
		}
		nodes[k.fleetKey]++
		names[k.fleetKey] = append(names[k.fleetKey], l.model.Model)
		for _, mv := range l.model.Metrics {
			if !(mv.Value > 0) || math.IsInf(mv.Value, 0) {
				continue
			}
			mk := metricKey{k.fleetKey, mv.Name}
			values[mk] = append(values[mk], mv.Value)
			units[mk] = cmp.Or(units[mk], mv.Unit)
		}
	}
	byKey := map[fleetKey]*FleetBaseline{}
	for k, n := range nodes {
		byKey[k] = &FleetBaseline{Model: slices.Min(names[k]), Key: k.model, DriverVersion: k.driver, Nodes: n}
	}
	for mk, vs := range values {
		if len(vs) < minSamples {
			continue
		}
		med := Median(vs)
		dev := make([]float64, len(vs))
		for i, v := range vs {
			dev[i] = math.Abs(v - med)
		}
		b := byKey[mk.fleetKey]
		b.Metrics = append(b.Metrics, FleetMetric{Metric: Metric(mk.metric), Unit: units[mk], Median: med, MAD: Median(dev), Samples: len(vs)})
	}
	out := make([]FleetBaseline, 0, len(byKey))
	for _, b := range byKey {
		slices.SortFunc(b.Metrics, func(x, y FleetMetric) int {
			return cmp.Or(cmp.Compare(metricOrder(x.Metric), metricOrder(y.Metric)), strings.Compare(string(x.Metric), string(y.Metric)))
		})
		out = append(out, *b)
	}
	slices.SortFunc(out, func(x, y FleetBaseline) int {
		return cmp.Or(strings.Compare(x.Key, y.Key), strings.Compare(x.DriverVersion, y.DriverVersion))
	})
	return out
}

// later says whether record a is later than b: finished later, or at the same second with
// the greater name (record names end in their start time and a content hash).
func later(a, b *v1alpha1.AcceptanceRecord) bool {
	if !a.Spec.FinishedAt.Equal(&b.Spec.FinishedAt) {
		return b.Spec.FinishedAt.Before(&a.Spec.FinishedAt)
	}
	return a.Name > b.Name
}

// metricOrder is a metric's place in Metrics; unknown metrics come after.
func metricOrder(m Metric) int {
	if i := slices.Index(Metrics, m); i >= 0 {
		return i
	}
	return len(Metrics)
}

// Median of a non-empty list (the mean of the middle two for an even count); NaN for none.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
