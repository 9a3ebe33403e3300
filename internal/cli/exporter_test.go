package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// startExporter runs the exporter in the background until the test ends, and returns
// its base URL and a stop function that waits for it to return (its error).
func startExporter(t testing.TB, o *exporterOptions) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan []net.Addr, 1)
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() { done <- runExporter(ctx, o, &out, func(a []net.Addr) { addrs <- a }) }()
	var base string
	select {
	case a := <-addrs:
		base = "http://" + a[0].String()
	case err := <-done:
		cancel()
		t.Fatalf("the exporter stopped before serving: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("the exporter did not start serving within 10 s")
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			return fmt.Errorf("the exporter did not stop within 10 s of its context ending")
		}
	}
	t.Cleanup(func() { _ = stop() })
	return base, stop
}

// simExporter are the options of an exporter over a simulated node on a free local port.
func simExporter(t testing.TB, scenario string) *exporterOptions {
	return &exporterOptions{
		gpu:       gpuOptions{sim: scenario},
		listen:    []string{"127.0.0.1:0"},
		interval:  50 * time.Millisecond,
		podSocket: filepath.Join(t.TempDir(), "no-kubelet.sock"), // absent: no pod labels
		kernelLog: defaultKernelLog,
		node:      "node-a",
	}
}

func get(t testing.TB, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

func TestExporterServesMetricsHealthAndALandingPageThenStops(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "node-a-20261129T120000Z-0000.json",
		`{"apiVersion":"gpunode.dev/record/v1","kind":"AcceptanceRecord","result":"passed","finishedAt":"2026-11-29T12:00:00Z"}`)
	o := simExporter(t, filepath.Join(t.TempDir(), "xid.yaml"))
	writeFile(t, filepath.Dir(o.gpu.sim), filepath.Base(o.gpu.sim), scenarioXID79)
	o.recordsDir = dir
	base, stop := startExporter(t, o)
	client := &http.Client{Timeout: 5 * time.Second}

	// The monitor reads the kernel log in the background: wait for the XID to be counted.
	var metrics string
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body := get(t, client, base+"/metrics")
		if code != http.StatusOK {
			t.Fatalf("/metrics answered %d: %s", code, body)
		}
		metrics = body
		if strings.Contains(body, `gpunode_xid_errors_total{UUID=`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{
		`# TYPE DCGM_FI_DEV_GPU_TEMP gauge`,
		`DCGM_FI_DEV_GPU_TEMP{DCGM_FI_DRIVER_VERSION="580.95.05",Hostname="node-a",UUID="GPU-`,
		`container="",device="nvidia0",gpu="0",modelName="NVIDIA H100 80GB HBM3",namespace="",pci_bus_id="00000000:18:00.0",pod=""}`,
		`# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter`,
		`gpu="2",xid="79"}`,
		`gpu="2",state="unhealthy"} 1`,
		`gpunode_collector_success{collector="telemetry"} 1`,
		`gpunode_collector_success{collector="health"} 1`,
		`gpunode_collector_success{collector="acceptance"} 1`,
		`gpunode_acceptance_last_result{result="passed"} 1`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if n := strings.Count(metrics, "\nDCGM_FI_DEV_SM_CLOCK{"); n != 7 {
		t.Errorf("%d SM clock series, want 7 (GPU 2 fell off the bus)", n)
	}
	if code, body := get(t, client, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz answered %d %q, want 200 ok", code, body)
	}
	if code, body := get(t, client, base+"/"); code != http.StatusOK || !strings.Contains(body, "gpunode exporter") || !strings.Contains(body, "/metrics") {
		t.Errorf("landing page answered %d:\n%s", code, body)
	}
	if err := stop(); err != nil {
		t.Fatalf("the exporter stopped with %v, want a clean stop", err)
	}
	if resp, err := client.Get(base + "/healthz"); err == nil {
		_ = resp.Body.Close()
		t.Error("the exporter still answers after it stopped")
	}
}

// basicAuthConfig allows user "prom" with password "s3cret" (bcrypt, cost 4).
const basicAuthConfig = `basic_auth_users:
  prom: $2a$04$cw80J9k6AZgBCToakW.u2e0e7gF5wcrXgQB8yUoykgRIFQ2OBy6dm
`

func TestExporterWebConfigRequiresBasicAuth(t *testing.T) {
	o := simExporter(t, "h200x1")
	o.webConfig = writeFile(t, t.TempDir(), "web.yml", basicAuthConfig)
	base, _ := startExporter(t, o)
	client := &http.Client{Timeout: 5 * time.Second}
	if code, _ := get(t, client, base+"/metrics"); code != http.StatusUnauthorized {
		t.Errorf("/metrics without credentials answered %d, want 401", code)
	}
	req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("prom", "s3cret")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/metrics with credentials answered %d, want 200", resp.StatusCode)
	}
}

func TestExporterRejectsBadUsage(t *testing.T) {
	dir := t.TempDir()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = busy.Close() }()
	cases := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"a zero interval is bad usage", []string{"--interval", "0s"}, ExitUsage, "--interval must be positive"},
		{"a web config that does not exist is bad usage", []string{"--web.config.file", filepath.Join(dir, "missing.yml")}, ExitUsage, "--web.config.file"},
		{"a malformed web config is bad usage", []string{"--web.config.file", writeFile(t, dir, "bad.yml", "tls_server_config: [\n")}, ExitUsage, "--web.config.file"},
		{"an address that names no host is bad usage", []string{"--web.listen-address", "256.0.0.1:1"}, ExitUsage, "--web.listen-address 256.0.0.1:1"},
		{"an address in use fails", []string{"--web.listen-address", busy.Addr().String()}, ExitFail, "--web.listen-address " + busy.Addr().String()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"exporter", "--sim", "h200x1", "--pod-resources-socket", ""}, tc.args...)
			execute(t, args...).check(t, tc.code, nil, []string{tc.err})
		})
	}
}

// vmRSS reads this process's resident set size from /proc/self/status, in bytes.
func vmRSS(tb testing.TB) float64 {
	tb.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skipf("resident memory needs /proc/self/status: %v", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var kib float64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%g kB", &kib); err != nil {
				tb.Fatalf("VmRSS line %q: %v", l, err)
			}
			return kib * 1024
		}
	}
	tb.Fatal("/proc/self/status has no VmRSS line")
	return 0
}

// BenchmarkExporterRSS runs the exporter over a simulated h100x8 node in this process,
// scrapes /metrics over HTTP b.N times (run with -benchtime 1000x for the
// measurement in docs/benchmarks.md) and reports the process's resident memory afterwards (rss-MiB, the test
// binary included) and the scrape latency seen by the client (p50-ms, p99-ms).
// Target (DESIGN.md): <= 30 MiB after 1,000 scrapes.
func BenchmarkExporterRSS(b *testing.B) {
	o := simExporter(b, "h100x8")
	o.podSocket = "" // no kubelet here: keep its log line out of the benchmark's output
	base, stop := startExporter(b, o)
	client := &http.Client{Timeout: 5 * time.Second}
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		resp, err := client.Get(base + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("scrape: %d %v", resp.StatusCode, err)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(vmRSS(b)/(1<<20), "rss-MiB")
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(took[(len(took)-1)*99/100])/1e6, "p99-ms")
	if err := stop(); err != nil {
		b.Fatal(err)
	}
}

// The standalone exporter (no agent on the node) learns of a recovery as the agent does:
// a reset its polls see (the pending row remap carried out), then a passing per-GPU check.
func TestTheStandaloneExporterClearsAGPUAfterAResetItsPollsSee(t *testing.T) {
	scenario := writeFile(t, t.TempDir(), "remap-then-reset.yaml", `apiVersion: gpunode.dev/sim/v1
preset: h100x8
faults:
  - at: 1s
    gpu: 4
    type: row-remap-pending
  - at: 3s
    gpu: 4
    type: gpu-reset
`)
	base, stop := startExporter(t, simExporter(t, scenario))
	client := &http.Client{Timeout: 5 * time.Second}
	gpu4 := func(state string) string { return `gpu="4",state="` + state + `"} 1` }
	waitBody := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		body := ""
		for time.Now().Before(deadline) {
			if _, body = get(t, client, base+"/metrics"); strings.Contains(body, want) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no %q on /metrics within 20 s:\n%s", want, body)
	}
	waitBody(gpu4("unhealthy"))
	waitBody(gpu4("healthy"))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
