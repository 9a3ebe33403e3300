package scale

import (
	"math"
	"testing"
)

// The scale test's own arithmetic runs everywhere (it needs no API server).
func TestQuantileInterpolatesWithinTheBucketAsPrometheusDoes(t *testing.T) {
	m, err := parseMetrics(`# HELP x
x_bucket{controller="a",le="0.01"} 50
x_bucket{controller="a",le="0.1"} 90
x_bucket{controller="a",le="1"} 100
x_bucket{controller="a",le="+Inf"} 100
x_bucket{controller="b",le="+Inf"} 7
`)
	if err != nil {
		t.Fatal(err)
	}
	h := m.histogram("x", map[string]string{"controller": "a"})
	for _, tc := range []struct {
		name string
		q    float64
		want float64
	}{
		{"the median lies at the top of the first bucket", 0.5, 0.01},
		{"the 70th percentile lies half way through the second bucket", 0.7, 0.055},
		{"the 99th percentile lies nine tenths through the third bucket", 0.99, 0.91},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := quantile(tc.q, h); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
	if got := count(since(h, m.histogram("x", map[string]string{"controller": "a"}))); got != 0 {
		t.Errorf("a histogram since itself counts %v, want 0", got)
	}
	if got := m.sum("x_bucket", map[string]string{"le": "+Inf"}); got != 107 {
		t.Errorf("sum of the +Inf buckets = %v, want 107", got)
	}
}
