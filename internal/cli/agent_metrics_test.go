package cli

import (
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// metricsAddr waits for the agent's "metrics served" line and returns its address.
func metricsAddr(t *testing.T, errOut *lockedBuffer) string {
	t.Helper()
	re := regexp.MustCompile(`msg="metrics served".* address=(\S+)`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := re.FindStringSubmatch(errOut.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no metrics served within 10 s; the agent's stderr:\n%s", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scrape returns the status and body of url.
func scrape(t *testing.T, url string) (int, string) {
	t.Helper()
	return get(t, &http.Client{Timeout: 5 * time.Second}, url)
}

// waitForSeries waits (generously) until /metrics has a line matching re.
func waitForSeries(t *testing.T, addr string, re *regexp.Regexp, errOut *lockedBuffer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		if _, last = scrape(t, "http://"+addr+"/metrics"); re.MatchString(last) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no series matching %s on /metrics within 20 s; gpunode_gpu_health:\n%s\nagent:\n%s", re, grepLines(last, "gpunode_gpu_health{"), errOut.String())
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The agent serves the exporter's metrics from its own health monitor: a fault injected
// into its simulated GPUs shows on /metrics, and the reset that follows (here injected as
// a person's reset, not one the agent carried out) clears it at a later poll, without a
// restart.
func TestTheAgentServesMetricsFromItsOwnEngineAndARecoveryClearsThem(t *testing.T) {
	dir := shortTempDir(t)
	sock := filepath.Join(dir, "sim.sock")
	errOut, stop := startSimAgent(t, dir, "--health-probe-bind-address", "")
	waitForFile(t, sock, errOut)
	addr := metricsAddr(t, errOut)
	gpu0 := func(state string, v int) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^gpunode_gpu_health\{UUID="[^"]+",gpu="0",state="` + state + `"\} ` + string(rune('0'+v)) + `$`)
	}
	waitForSeries(t, addr, gpu0("healthy", 1), errOut)
	if code, body := scrape(t, "http://"+addr+"/metrics"); code != http.StatusOK || !strings.Contains(body, "DCGM_FI_DEV_GPU_TEMP{") {
		t.Fatalf("/metrics: %d, no DCGM_FI_DEV_GPU_TEMP:\n%.2000s", code, body)
	}
	execute(t, "sim", "inject", "n1", "--socket", sock, "--gpu", "1", "--xid", "13").check(t, ExitOK, []string{"injected xid 13"}, nil)
	// A poll sees a reset by what it leaves behind; a pending row remap is seen only by a
	// poll, so the reset below comes after a poll saw the fault.
	execute(t, "sim", "inject", "n1", "--socket", sock, "--gpu", "0", "--fault", "row-remap-pending").check(t, ExitOK, nil, nil)
	waitForSeries(t, addr, gpu0("unhealthy", 1), errOut)
	_, body := scrape(t, "http://"+addr+"/metrics")
	if !regexp.MustCompile(`(?m)^gpunode_xid_errors_total\{.*gpu="1".*xid="13".*\} 1$`).MatchString(body) {
		t.Errorf("no gpunode_xid_errors_total for XID 13 on GPU 1 (the agent's findings feed the counter):\n%s", grepLines(body, "xid_errors"))
	}
	execute(t, "sim", "inject", "n1", "--socket", sock, "--gpu", "0", "--fault", "gpu-reset").check(t, ExitOK, nil, nil)
	waitForSeries(t, addr, gpu0("healthy", 1), errOut)
	if strings.Contains(errOut.String(), "metrics server stopped") {
		t.Errorf("the metrics server stopped:\n%s", errOut.String())
	}
	for path, want := range map[string]string{"/healthz": "ok", "/": "gpunode exporter"} {
		if code, body := scrape(t, "http://"+addr+path); code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("%s: %d %.200q, want 200 with %q", path, code, body, want)
		}
	}
	if code := stop(); code != ExitOK {
		t.Fatalf("the agent exited %d:\n%s", code, errOut.String())
	}
	for _, s := range []string{"recovery seen", "why=\"its pending row remap was carried out"} {
		if !strings.Contains(errOut.String(), s) {
			t.Errorf("the agent's log lacks %q:\n%s", s, errOut.String())
		}
	}
}

func TestTheAgentsMetricsFlags(t *testing.T) {
	dir := shortTempDir(t)
	t.Run("a web configuration that does not parse is bad usage", func(t *testing.T) {
		bad := writeFile(t, dir, "web.yml", "tls_server_config: [\n")
		execute(t, "agent", "--node-name", "n1", "--sim", "h100x8", "--web.config.file", bad).
			check(t, ExitUsage, nil, []string{"--web.config.file " + bad})
	})
	t.Run("an address of 0 serves no metrics", func(t *testing.T) {
		errOut, stop := startSimAgent(t, dir, "--metrics-bind-address", "0", "--health-probe-bind-address", "")
		waitForFile(t, filepath.Join(dir, "sim.sock"), errOut)
		if code := stop(); code != ExitOK {
			t.Fatalf("exit %d:\n%s", code, errOut.String())
		}
		if strings.Contains(errOut.String(), "metrics served") {
			t.Errorf("metrics served with --metrics-bind-address 0:\n%s", errOut.String())
		}
	})
}
