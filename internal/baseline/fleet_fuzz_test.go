package baseline

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// fleetFrom turns fuzz bytes into records: each 4 bytes are one record of node b0%7, minute
// b1, passed or failed by b2's low bit, on one of two drivers and one of two spellings of
// one of two models, with an hbm-copy value of b3 (0 included).
func fleetFrom(data []byte) []v1alpha1.AcceptanceRecord {
	models := []string{"NVIDIA H200", "nvidia-h200", "NVIDIA H100 80GB HBM3", "H100 80GB HBM3"}
	var out []v1alpha1.AcceptanceRecord
	for i := 0; i+4 <= len(data); i += 4 {
		b := data[i : i+4]
		result := v1alpha1.AcceptancePassed
		if b[2]&1 == 1 {
			result = v1alpha1.AcceptanceFailed
		}
		driver := []string{drv1, drv2}[b[2]>>1&1]
		r := rec(fmt.Sprintf("n%d", b[0]%7), int(b[1]), result, models[b[2]>>2&3], driver, hbm(float64(b[3])))
		r.Name = fmt.Sprintf("%s-%d", r.Name, i) // unique, as the API's names are
		out = append(out, r)
	}
	return out
}

// FuzzFleetBaselines holds the properties of any fleet: the order of the records does not
// matter, a median lies between the smallest and the largest value that could be its
// sample, the deviation is not negative, no metric has fewer samples than the minimum or
// more than the baseline's nodes, and no baseline counts more nodes than there are.
func FuzzFleetBaselines(f *testing.F) {
	f.Add([]byte{0, 1, 0, 200, 1, 1, 0, 100, 2, 1, 0, 150})
	f.Add([]byte{0, 1, 0, 200, 0, 2, 1, 10, 0, 3, 2, 50, 1, 1, 4, 0})
	f.Add([]byte{3, 9, 8, 1, 3, 9, 8, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		recs := fleetFrom(data)
		for _, minSamples := range []int{0, 1, 3} {
			got := FleetBaselines(recs, minSamples)
			shuffled := append([]v1alpha1.AcceptanceRecord(nil), recs...)
			rand.New(rand.NewPCG(uint64(len(data)), 7)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if again := FleetBaselines(shuffled, minSamples); !reflect.DeepEqual(got, again) {
				t.Fatalf("the order of the records changed the result:\n%+v\n%+v", got, again)
			}
			for _, b := range got {
				if b.Nodes < 1 || b.Nodes > 7 {
					t.Errorf("%s %s: %d nodes of 7 at most", b.Key, b.DriverVersion, b.Nodes)
				}
				for _, m := range b.Metrics {
					if m.Samples < max(minSamples, 1) || m.Samples > b.Nodes {
						t.Errorf("%s %s %s: %d samples, minimum %d, %d nodes", b.Key, b.DriverVersion, m.Metric, m.Samples, minSamples, b.Nodes)
					}
					if m.Median < 1 || m.Median > 255 || m.MAD < 0 || m.MAD > 254 {
						t.Errorf("%s %s %s: median %v, MAD %v outside the values' range 1..255", b.Key, b.DriverVersion, m.Metric, m.Median, m.MAD)
					}
				}
			}
		}
	})
}

// BenchmarkFleetBaselines computes the baselines of 5,000 records: 1,000 nodes of two
// models on two drivers, five records each (one in ten failed), five metrics per record.
func BenchmarkFleetBaselines(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []v1alpha1.AcceptanceRecord
	for n := range 1000 {
		for k := range 5 {
			result := v1alpha1.AcceptancePassed
			if rng.IntN(10) == 0 {
				result = v1alpha1.AcceptanceFailed
			}
			values := map[string]float64{}
			for _, m := range Metrics {
				values[string(m)] = 100 + rng.Float64()*10
			}
			recs = append(recs, rec(fmt.Sprintf("node-%04d", n), k, result, []string{h200, "NVIDIA H100 80GB HBM3"}[n%2], []string{drv1, drv2}[k/3], values))
		}
	}
	for b.Loop() {
		if got := FleetBaselines(recs, DefaultMinSamples); len(got) != 4 {
			b.Fatalf("%d baselines, want 4", len(got))
		}
	}
}
