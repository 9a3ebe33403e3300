package monitoring

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// The alert-behaviour tests evaluate rule expressions with Prometheus's own PromQL engine
// over series held in memory. (promqltest's storage would need the whole TSDB and, through
// it, cloud SDKs as module requirements; a list of samples is all an instant query needs.)

// step is the interval between the samples of a series description.
const step = time.Minute

// floatSample is one float sample of a series.
type floatSample struct {
	t int64
	f float64
}

func (s floatSample) T() int64                    { return s.t }
func (floatSample) ST() int64                     { return 0 }
func (s floatSample) F() float64                  { return s.f }
func (floatSample) H() *histogram.Histogram       { return nil }
func (floatSample) FH() *histogram.FloatHistogram { return nil }
func (floatSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s floatSample) Copy() chunks.Sample         { return s }

// memSeries is a series and its samples, oldest first.
type memSeries struct {
	labels  labels.Labels
	samples []chunks.Sample
}

// loadSeries parses series descriptions in promtool's notation, one sample a minute from
// time 0: `up{job="gpunode"} 1x60`, `x 0+1x10 _x5 3` ("_" = no sample).
func loadSeries(t *testing.T, descs []string) []memSeries {
	t.Helper()
	out := make([]memSeries, 0, len(descs))
	for _, d := range descs {
		lset, vals, err := promqlParser.ParseSeriesDesc(d)
		if err != nil {
			t.Fatalf("series %q: %v", d, err)
		}
		s := memSeries{labels: lset}
		for i, v := range vals {
			if !v.Omitted {
				s.samples = append(s.samples, floatSample{t: int64(i) * step.Milliseconds(), f: v.Value})
			}
		}
		out = append(out, s)
	}
	return out
}

// memQueryable answers Select from a fixed list of series.
func memQueryable(series []memSeries) storage.Queryable {
	sorted := slices.Clone(series)
	slices.SortFunc(sorted, func(a, b memSeries) int { return labels.Compare(a.labels, b.labels) })
	return &storage.MockQueryable{MockQuerier: &storage.MockQuerier{
		SelectMockFunction: func(_ bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
			var sel []storage.Series
			for _, s := range sorted {
				if matchesAll(s.labels, ms) {
					sel = append(sel, storage.NewListSeries(s.labels, inRange(s.samples, hints)))
				}
			}
			return &listSeriesSet{series: sel, i: -1}
		},
	}}
}

func matchesAll(lset labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(lset.Get(m.Name)) {
			return false
		}
	}
	return true
}

func inRange(samples []chunks.Sample, hints *storage.SelectHints) []chunks.Sample {
	if hints == nil {
		return samples
	}
	var out []chunks.Sample
	for _, s := range samples {
		if s.T() >= hints.Start && s.T() <= hints.End {
			out = append(out, s)
		}
	}
	return out
}

// listSeriesSet iterates a slice of series.
type listSeriesSet struct {
	series []storage.Series
	i      int
}

func (l *listSeriesSet) Next() bool                      { l.i++; return l.i < len(l.series) }
func (l *listSeriesSet) At() storage.Series              { return l.series[l.i] }
func (*listSeriesSet) Err() error                        { return nil }
func (*listSeriesSet) Warnings() annotations.Annotations { return nil }

// instantQuery evaluates expr at ts over the series, as Prometheus's rule manager does.
func instantQuery(t *testing.T, series []memSeries, expr string, ts time.Time) promql.Vector {
	t.Helper()
	v, err := evalInstant(series, expr, ts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func evalInstant(series []memSeries, expr string, ts time.Time) (promql.Vector, error) {
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: 10 * time.Second, Parser: promqlParser})
	q, err := engine.NewInstantQuery(context.Background(), memQueryable(series), nil, expr, ts)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	defer q.Close()
	res := q.Exec(context.Background())
	if res.Err != nil {
		return nil, fmt.Errorf("query %q at %s: %w", expr, ts, res.Err)
	}
	v, err := res.Vector()
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	return v, nil
}
