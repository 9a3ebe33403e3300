package metrics

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
)

func TestABrokenBackendReportsItsCollectorDownAndTheRestIsServed(t *testing.T) {
	e, _, _ := fullExporter(t, faultyH100, brokenTelemetry{})
	got := gather(t, e) // first scrape
	for _, name := range MetricNames() {
		if strings.HasPrefix(name, "DCGM_FI_") && got[name] > 0 {
			t.Errorf("%s served %d series from a backend that did not answer", name, got[name])
		}
	}
	for _, name := range []string{"gpunode_gpu_health", "gpunode_findings", "gpunode_xid_errors_total", "gpunode_acceptance_last_result"} {
		if got[name] == 0 {
			t.Errorf("%s is missing: a broken telemetry backend took it down", name)
		}
	}
	want := `
# HELP gpunode_collector_success Whether the collector answered in this scrape (1) or failed (0).
# TYPE gpunode_collector_success gauge
gpunode_collector_success{collector="acceptance"} 1
gpunode_collector_success{collector="health"} 1
gpunode_collector_success{collector="telemetry"} 0
# HELP gpunode_scrape_errors_total Scrapes in which the collector failed, since the exporter started.
# TYPE gpunode_scrape_errors_total counter
gpunode_scrape_errors_total{collector="acceptance"} 0
gpunode_scrape_errors_total{collector="health"} 0
gpunode_scrape_errors_total{collector="telemetry"} 2
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpunode_collector_success", "gpunode_scrape_errors_total"); err != nil {
		t.Error(err) // second scrape: the error count grew
	}
	if err := e.Healthy(context.Background(), time.Minute); err == nil {
		t.Error("Healthy with a broken backend returned nil")
	}
}

func TestValuesADeviceCannotReportAreOmitted(t *testing.T) {
	notSupported := fmt.Errorf("field: %w", gpu.ErrNotSupported)
	edit := func(tel *gpu.Telemetry) {
		tel.Devices[0].SetErr(gpu.FieldMemoryTemperature, notSupported)
		tel.Devices[0].SetErr(gpu.FieldMemoryReserved, notSupported)
		tel.Devices[1].SetErr(gpu.FieldRecoveryAction, notSupported)
		tel.Devices[1].SetErr(gpu.FieldClocks, errors.New("nvmlDeviceGetClockInfo: ERROR_UNKNOWN"))
	}
	b := simBackend(t, "h200x1")
	two := editedTelemetry{src: b, edit: func(tel *gpu.Telemetry) {
		tel.Devices = append(tel.Devices, tel.Devices[0])
		tel.Devices[1].Index, tel.Devices[1].UUID = 1, "GPU-00000000-0000-0000-0000-000000000001"
		tel.Devices[1].Errors = maps.Clone(tel.Devices[1].Errors)
		edit(tel)
	}}
	e, err := New(Options{Telemetry: two, Inventory: b, Clock: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	got := gather(t, e)
	want := map[string]int{
		"DCGM_FI_DEV_GPU_TEMP":               2,
		"DCGM_FI_DEV_MEMORY_TEMP":            1, // GPU 0 has no memory sensor
		"DCGM_FI_DEV_FB_RESERVED":            1,
		"DCGM_FI_DEV_FB_FREE":                2,
		"DCGM_FI_DEV_SM_CLOCK":               1, // GPU 1's clock read failed
		"DCGM_FI_DEV_MEM_CLOCK":              1,
		"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": 0, // a PCIe H200 has no NVLink
		"gpunode_gpu_recovery_action":        5, // GPU 0's five states, none for GPU 1
		"DCGM_FI_DEV_XID_ERRORS":             0, // no XID counter configured
	}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("%s: %d series, want %d", name, got[name], n)
		}
	}
}

func TestPodLabelsNameTheFirstContainerThatHoldsTheGPU(t *testing.T) {
	b := simBackend(t, "h200x1")
	snap, _ := b.Snapshot(context.Background())
	uuid := snap.Devices[0].UUID
	cases := []struct {
		name string
		pods PodLookup
		want string
	}{
		{"no lookup leaves the labels empty", nil, `container="" namespace="" pod=""`},
		{"a GPU no pod holds has empty labels", fakePods{}, `container="" namespace="" pod=""`},
		{"a shared GPU names the first container in namespace, pod, container order", fakePods{uuid: {
			{Namespace: "ml", Name: "serve-1", Container: "b"},
			{Namespace: "ml", Name: "serve-0", Container: "z"},
			{Namespace: "zz", Name: "a", Container: "a"},
			{Namespace: "ml", Name: "serve-0", Container: "y"},
		}}, `container="y" namespace="ml" pod="serve-0"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(Options{Telemetry: b, Inventory: b, Pods: tc.pods, Hostname: "h", Clock: fixedClock})
			if err != nil {
				t.Fatal(err)
			}
			out := string(exposition(t, e))
			line := lineOf(out, "DCGM_FI_DEV_GPU_TEMP{")
			for _, label := range strings.Fields(tc.want) {
				if !strings.Contains(line, label) {
					t.Errorf("series %s lacks %s", line, label)
				}
			}
		})
	}
}

func lineOf(exposition, prefix string) string {
	for _, l := range strings.Split(exposition, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// failingInventory cannot read the devices' identity.
type failingInventory struct{ calls int }

func (f *failingInventory) Snapshot(context.Context) (*gpu.Snapshot, error) {
	f.calls++
	return nil, errors.New("nvml snapshot: counting devices: ERROR_UNKNOWN")
}

func TestAnInventoryThatFailsStillServesTheValuesAndSaysSo(t *testing.T) {
	inv := &failingInventory{}
	now := at
	e, err := New(Options{Telemetry: simBackend(t, "h200x1"), Inventory: inv, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	got := gather(t, e)
	if got["DCGM_FI_DEV_GPU_TEMP"] != 1 {
		t.Errorf("GPU temperature: %d series, want 1", got["DCGM_FI_DEV_GPU_TEMP"])
	}
	if v := successOf(t, e, "telemetry"); v != 0 {
		t.Errorf("telemetry success %g with labels it could not read, want 0", v)
	}
	if inv.calls != 1 {
		t.Errorf("inventory read %d times within %s of the first attempt, want once", inv.calls, refreshEvery)
	}
	now = now.Add(refreshEvery)
	gather(t, e)
	if inv.calls != 2 {
		t.Errorf("inventory not retried after %s (%d reads)", refreshEvery, inv.calls)
	}
}

// successOf is gpunode_collector_success of one collector in a fresh scrape.
func successOf(t *testing.T, c prometheus.Collector, collector string) float64 {
	t.Helper()
	line := lineOf(string(exposition(t, c)), `gpunode_collector_success{collector="`+collector+`"}`)
	var v float64
	if _, err := fmt.Sscanf(line[strings.LastIndexByte(line, ' ')+1:], "%g", &v); err != nil {
		t.Fatalf("no success series for %s: %q", collector, line)
	}
	return v
}

func TestXIDCounterCountsEachXIDOnceWhicheverWayItWasReported(t *testing.T) {
	x := NewXIDCounter()
	f := func(gpuIndex, code int, src health.Source) health.Finding {
		return health.Finding{GPU: fmt.Sprintf("GPU-%d", gpuIndex), GPUIndex: gpuIndex, Cause: health.XIDCause(code), Source: src, Count: 1}
	}
	// GPU 0: three XID 13 in the kernel log, two of them also as events.
	for range 3 {
		x.Observe(f(0, 13, health.SourceKmsg), false)
	}
	for range 2 {
		x.Observe(f(0, 13, health.SourceNVMLEvent), false)
	}
	x.Observe(f(1, 9999, health.SourceNVMLEvent), true) // not in the catalog
	x.Observe(f(1, 31, health.SourceKmsg), true)
	x.Observe(health.Finding{GPUIndex: -1, Cause: health.XIDCause(79), Source: health.SourceKmsg}, true) // no known GPU
	x.Observe(health.Finding{GPU: "GPU-1", GPUIndex: 1, Cause: "row-remap-pending", Source: health.SourceCounter}, true)
	x.Observe(health.Finding{GPU: "GPU-1", GPUIndex: 1, Cause: "sxid-12028", Source: health.SourceKmsg}, true)

	var got []string
	for _, s := range x.series() {
		got = append(got, fmt.Sprintf("%d/%s/%s=%d", s.key.index, s.key.uuid, s.key.code, s.value))
	}
	want := []string{"-1//79=1", "0/GPU-0/13=3", "1/GPU-1/31=1", "1/GPU-1/other=1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("series %v, want %v", got, want)
	}
	if x.last("GPU-1") != 31 || x.last("GPU-0") != 13 || x.last("GPU-7") != 0 {
		t.Errorf("last XIDs %d %d %d, want 31 13 0", x.last("GPU-1"), x.last("GPU-0"), x.last("GPU-7"))
	}
}

func TestXIDCounterStaysBounded(t *testing.T) {
	x := NewXIDCounter()
	for i := range 3 * maxXIDSeries {
		x.Observe(health.Finding{GPU: fmt.Sprintf("GPU-%d", i), GPUIndex: i, Cause: health.XIDCause(13), Source: health.SourceKmsg}, true)
	}
	s := x.series()
	if len(s) > maxXIDSeries+1 {
		t.Fatalf("%d series after %d distinct GPUs, want at most %d", len(s), 3*maxXIDSeries, maxXIDSeries+1)
	}
	var total uint64
	for _, c := range s {
		total += c.value
	}
	if total != 3*maxXIDSeries {
		t.Errorf("counted %d XIDs, want %d: past the bound they go to the node's other series", total, 3*maxXIDSeries)
	}
}

func TestAcceptanceMetricsComeFromTheNewestRecord(t *testing.T) {
	cases := []struct {
		name   string
		fsys   fstest.MapFS
		series int
	}{
		{"the newest record is the failed run; other files are passed over", records(), 2},
		{"a folder without records serves nothing and is not an error", fstest.MapFS{"notes.txt": {Data: []byte("x")}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newAcceptanceCollector(tc.fsys)
			got := gather(t, single{c})
			if got["gpunode_acceptance_last_result"] != tc.series {
				t.Errorf("%d result series, want %d", got["gpunode_acceptance_last_result"], tc.series)
			}
		})
	}
	b := simBackend(t, "h200x1")
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{Telemetry: b, Inventory: b, Records: os.DirFS(notADir), Clock: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	if v := successOf(t, e, "acceptance"); v != 0 {
		t.Errorf("acceptance success %g for a records folder that is a file, want 0", v)
	}
	if v := successOf(t, e, "telemetry"); v != 1 {
		t.Errorf("telemetry success %g next to a failing acceptance collector, want 1", v)
	}
}

// Before the agent's first acceptance run its records folder does not exist: that is no
// result yet, not a failed scrape; once the agent writes a record it is served.
func TestAcceptanceBeforeTheFirstRunIsNoResultAndNotAFailure(t *testing.T) {
	b := simBackend(t, "h200x1")
	dir := filepath.Join(t.TempDir(), "records")
	e, err := New(Options{Telemetry: b, Inventory: b, Records: os.DirFS(dir), Clock: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	if v := successOf(t, e, "acceptance"); v != 1 {
		t.Errorf("acceptance success %g before any record folder exists, want 1", v)
	}
	if n := gather(t, e)["gpunode_acceptance_last_result"]; n != 0 {
		t.Errorf("%d result series before any acceptance run, want none", n)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := `{"apiVersion":"gpunode.dev/record/v1","kind":"AcceptanceRecord","id":"n","result":"passed","finishedAt":"2025-03-01T12:00:00Z"}`
	if err := os.WriteFile(filepath.Join(dir, "n.json"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if line := lineOf(string(exposition(t, e)), `gpunode_acceptance_last_result{result="passed"}`); !strings.HasSuffix(line, " 1") {
		t.Errorf("after the first record: %q, want passed 1", line)
	}
}

// countingTelemetry counts the reads of another source.
type countingTelemetry struct {
	src   gpu.TelemetrySource
	reads int
}

func (c *countingTelemetry) Telemetry(ctx context.Context) (*gpu.Telemetry, error) {
	c.reads++
	return c.src.Telemetry(ctx)
}

func TestHealthyAnswersFromARecentReadOrReadsNow(t *testing.T) {
	b := simBackend(t, "h200x1")
	src := &countingTelemetry{src: b}
	now := at
	e, err := New(Options{Telemetry: src, Inventory: b, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Healthy(ctx, time.Minute); err != nil || src.reads != 1 {
		t.Fatalf("Healthy before any scrape: %v after %d reads, want nil after reading once", err, src.reads)
	}
	now = now.Add(30 * time.Second)
	if err := e.Healthy(ctx, time.Minute); err != nil || src.reads != 1 {
		t.Errorf("Healthy 30 s after a read: %v after %d reads, want nil without reading", err, src.reads)
	}
	now = now.Add(time.Minute)
	gather(t, e) // a scrape is a read too
	now = now.Add(30 * time.Second)
	if err := e.Healthy(ctx, time.Minute); err != nil || src.reads != 2 {
		t.Errorf("Healthy 30 s after a scrape: %v after %d reads, want nil without reading", err, src.reads)
	}
}

func TestRecoveryActionsOutsideTheKnownOnesStayBounded(t *testing.T) {
	cases := []struct {
		name   string
		action gpu.RecoveryAction
		want   string
	}{
		{"a newer action the adapter names gets its own series", "bus-reset", `action="bus-reset"`},
		{"a value nobody names is unknown", "unknown-42", `action="unknown"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := simBackend(t, "h200x1")
			tel := editedTelemetry{src: b, edit: func(tel *gpu.Telemetry) { tel.Devices[0].RecoveryAction = tc.action }}
			e, err := New(Options{Telemetry: tel, Inventory: b, Clock: fixedClock})
			if err != nil {
				t.Fatal(err)
			}
			var series []string
			for _, l := range strings.Split(string(exposition(t, e)), "\n") {
				if strings.HasPrefix(l, "gpunode_gpu_recovery_action{") {
					series = append(series, l)
				}
			}
			ones := 0
			for _, l := range series {
				if strings.HasSuffix(l, " 1") {
					ones++
					if !strings.Contains(l, tc.want) {
						t.Errorf("the current action is %s, want %s", l, tc.want)
					}
				}
			}
			if len(series) != 6 || ones != 1 {
				t.Errorf("%d series with %d set, want the 5 known at 0 and the current one at 1:\n%s", len(series), ones, strings.Join(series, "\n"))
			}
		})
	}
}

func TestConcurrentScrapesSeeTheSameExposition(t *testing.T) {
	e, xids, h := fullExporter(t, faultyH100, nil)
	reg, err := NewRegistry(e)
	if err != nil {
		t.Fatal(err)
	}
	want := string(exposition(t, e))
	done := make(chan string, 4)
	for range 4 {
		go func() {
			for range 20 {
				if _, err := reg.Gather(); err != nil {
					done <- err.Error()
					return
				}
				xids.Observe(h.xidFinding(6, 13, health.SourceKmsg), false) // the monitor writes meanwhile
			}
			done <- ""
		}()
	}
	for range 4 {
		if msg := <-done; msg != "" {
			t.Errorf("concurrent Gather: %s", msg)
		}
	}
	got := string(exposition(t, e))
	if strings.Count(got, "\n") != strings.Count(want, "\n")+1 || !strings.Contains(got, `gpu="6",xid="13"} 80`) {
		t.Errorf("after 80 XIDs on GPU 6 the exposition should differ from the first by that one series:\n%s", got)
	}
}
