package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// dumpRequestCounts writes the API server's request counters (apiserver_request_total, by
// resource and verb) and the controllers' reconcile and workqueue metrics to the file GPUNODE_E2E_API_REQUESTS names, when the test ends; unset,
// it does nothing. It shows which kinds a run read and wrote how often.
func dumpRequestCounts(t *testing.T, cfg *rest.Config) {
	t.Helper()
	path := os.Getenv("GPUNODE_E2E_API_REQUESTS")
	if path == "" {
		return
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
		if err != nil {
			t.Errorf("reading the API server's metrics: %v", err)
			return
		}
		var out strings.Builder
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "apiserver_request_total{") || strings.HasPrefix(l, "process_cpu_seconds_total") ||
				strings.HasPrefix(l, "apiserver_request_duration_seconds_sum{") || strings.HasPrefix(l, "apiserver_request_duration_seconds_count{") {
				out.WriteString(sc.Text() + "\n")
			}
		}
		mfs, err := ctrlmetrics.Registry.Gather()
		if err != nil {
			t.Errorf("reading the controllers' metrics: %v", err)
		}
		for _, mf := range mfs {
			if !strings.HasPrefix(mf.GetName(), "controller_runtime_reconcile") && !strings.HasPrefix(mf.GetName(), "workqueue_") &&
				!strings.HasPrefix(mf.GetName(), "rest_client_request") {
				continue
			}
			for _, m := range mf.GetMetric() {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				switch {
				case m.GetCounter() != nil:
					fmt.Fprintf(&out, "%s{%s} %g\n", mf.GetName(), strings.Join(labels, ","), m.GetCounter().GetValue())
				case m.GetHistogram() != nil:
					h := m.GetHistogram()
					fmt.Fprintf(&out, "%s{%s} count=%d sum=%g\n", mf.GetName(), strings.Join(labels, ","), h.GetSampleCount(), h.GetSampleSum())
				}
			}
		}
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Errorf("writing %s: %v", path, err)
		}
	})
}
