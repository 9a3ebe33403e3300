package scale

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// report is what one run measured.
type report struct {
	n, faults, heldCount int
	populate, sync       time.Duration
	cpuSync              float64
	peakKiB, steadyKiB   int
	heapInuseMiB         float64
	apiRequests          float64
	reconcileErrors      float64
	settings             string
	holdP50, holdP99     time.Duration
	holdMax              time.Duration
	// per controller: reconciles and decision-time quantiles (seconds), in the first sync
	// and while the faults were handled.
	ctl []ctlReport
}

type ctlReport struct {
	name                           string
	syncCount, syncP50, syncP99    float64
	faultCount, faultP50, faultP99 float64
}

// fill takes the decision times and counters from the scrapes after the sync, before the
// faults and after them.
func (r *report) fill(synced, before, after metrics) {
	const h = "controller_runtime_reconcile_time_seconds"
	for _, ctl := range controllers {
		m := map[string]string{"controller": ctl}
		hs := synced.histogram(h, m)
		hf := since(after.histogram(h, m), before.histogram(h, m))
		r.ctl = append(r.ctl, ctlReport{name: ctl,
			syncCount: count(hs), syncP50: quantile(0.5, hs), syncP99: quantile(0.99, hs),
			faultCount: count(hf), faultP50: quantile(0.5, hf), faultP99: quantile(0.99, hf)})
	}
	r.heapInuseMiB = after.sum("go_memstats_heap_inuse_bytes", nil) / (1 << 20)
	r.apiRequests = synced.sum("rest_client_requests_total", nil)
	r.reconcileErrors = after.sum("controller_runtime_reconcile_errors_total", nil)
}

// line is the parseable summary: SCALE key=value ...
func (r *report) line() string {
	f := []string{
		fmt.Sprintf("nodes=%d", r.n),
		fmt.Sprintf("populate_s=%.1f", r.populate.Seconds()),
		fmt.Sprintf("sync_s=%.1f", r.sync.Seconds()),
		fmt.Sprintf("sync_cpu_s=%.1f", r.cpuSync),
		fmt.Sprintf("sync_api_requests=%.0f", r.apiRequests),
		fmt.Sprintf("rss_peak_mib=%.1f", float64(r.peakKiB)/1024),
		fmt.Sprintf("rss_steady_mib=%.1f", float64(r.steadyKiB)/1024),
		fmt.Sprintf("heap_inuse_mib=%.1f", r.heapInuseMiB),
	}
	for _, c := range r.ctl {
		k := strings.TrimPrefix(c.name, "gpunode-")
		f = append(f,
			fmt.Sprintf("%s_sync_reconciles=%.0f", k, c.syncCount),
			fmt.Sprintf("%s_sync_p50_ms=%.1f", k, c.syncP50*1000),
			fmt.Sprintf("%s_sync_p99_ms=%.1f", k, c.syncP99*1000),
			fmt.Sprintf("%s_fault_reconciles=%.0f", k, c.faultCount),
			fmt.Sprintf("%s_fault_p50_ms=%.1f", k, c.faultP50*1000),
			fmt.Sprintf("%s_fault_p99_ms=%.1f", k, c.faultP99*1000))
	}
	f = append(f,
		fmt.Sprintf("faults=%d", r.faults),
		fmt.Sprintf("held=%d", r.heldCount),
		fmt.Sprintf("hold_p50_ms=%.1f", ms(r.holdP50)),
		fmt.Sprintf("hold_p99_ms=%.1f", ms(r.holdP99)),
		fmt.Sprintf("hold_max_ms=%.1f", ms(r.holdMax)),
		fmt.Sprintf("reconcile_errors=%.0f", r.reconcileErrors),
		fmt.Sprintf("controller_settings=%q", r.settings))
	return "SCALE " + strings.Join(f, " ")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// enforce fails t for each of DESIGN.md's targets the run missed.
func (r *report) enforce(t *testing.T) {
	t.Helper()
	if r.peakKiB > targetRSSKiB {
		t.Errorf("peak RSS %.1f MiB, DESIGN.md's target is at most %d MiB", float64(r.peakKiB)/1024, targetRSSKiB>>10)
	}
	for _, c := range r.ctl {
		for _, p := range []float64{c.syncP99, c.faultP99} {
			if p > targetDecisionS {
				t.Errorf("%s: decision p99 %.1f ms, DESIGN.md's target is at most %.0f ms", c.name, p*1000, targetDecisionS*1000)
			}
		}
	}
}
