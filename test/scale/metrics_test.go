package scale

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// metrics is one scrape of the controller's /metrics.
type metrics []sample

// scrape reads url in the Prometheus text format.
func scrape(ctx context.Context, url string) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: status %d: %w", url, resp.StatusCode, err)
	}
	return parseMetrics(string(b))
}

// parseMetrics parses the Prometheus text format (no escaped quotes in label values, which
// the metrics read here do not have).
func parseMetrics(text string) (metrics, error) {
	var out metrics
	for line := range strings.SplitSeq(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("parsing metrics line %q: no value", line)
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("parsing metrics line %q: %w", line, err)
		}
		s := sample{name: line[:sp], labels: map[string]string{}, value: v}
		if i := strings.IndexByte(s.name, '{'); i >= 0 {
			for kv := range strings.SplitSeq(strings.TrimSuffix(s.name[i+1:], "}"), ",") {
				if k, val, ok := strings.Cut(kv, "="); ok {
					s.labels[k] = strings.Trim(val, `"`)
				}
			}
			s.name = s.name[:i]
		}
		out = append(out, s)
	}
	return out, nil
}

// sum adds the samples of name whose labels include match.
func (m metrics) sum(name string, match map[string]string) float64 {
	var total float64
	for _, s := range m {
		if s.name == name && matches(s.labels, match) {
			total += s.value
		}
	}
	return total
}

func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// bucket is a cumulative histogram bucket.
type bucket struct {
	le    float64
	count float64
}

// histogram is the cumulative buckets of histogram name for the samples matching match.
func (m metrics) histogram(name string, match map[string]string) []bucket {
	byLE := map[float64]float64{}
	for _, s := range m {
		if s.name != name+"_bucket" || !matches(s.labels, match) {
			continue
		}
		le, err := strconv.ParseFloat(s.labels["le"], 64)
		if err != nil {
			continue
		}
		byLE[le] += s.value
	}
	out := make([]bucket, 0, len(byLE))
	for le, c := range byLE {
		out = append(out, bucket{le, c})
	}
	slices.SortFunc(out, func(a, b bucket) int { return cmpFloat(a.le, b.le) })
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// since is h minus an earlier scrape's buckets of the same histogram.
func since(h, before []bucket) []bucket {
	out := slices.Clone(h)
	for i := range out {
		for _, b := range before {
			if b.le == out[i].le {
				out[i].count -= b.count
			}
		}
	}
	return out
}

// quantile is the q-quantile of cumulative buckets h, interpolated within a bucket as
// Prometheus's histogram_quantile does; NaN when h counts nothing.
func quantile(q float64, h []bucket) float64 {
	if len(h) == 0 || h[len(h)-1].count == 0 {
		return math.NaN()
	}
	rank := q * h[len(h)-1].count
	lower, below := 0.0, 0.0
	for _, b := range h {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return lower // beyond the last finite bound: its value is all that is known
			}
			if b.count == below {
				return b.le
			}
			return lower + (b.le-lower)*(rank-below)/(b.count-below)
		}
		lower, below = b.le, b.count
	}
	return h[len(h)-1].le
}

// count is how many observations cumulative buckets h hold.
func count(h []bucket) float64 {
	if len(h) == 0 {
		return 0
	}
	return h[len(h)-1].count
}
