package cli

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestTheAgentsProbesAnswerLivenessAlwaysAndReadinessOnceReady(t *testing.T) {
	notYet := errors.New("the health monitor has not polled the GPUs yet")
	cases := []struct {
		name  string
		ready error
		path  string
		code  int
		body  string
	}{
		{"liveness answers before the first round", notYet, "/healthz", http.StatusOK, "ok"},
		{"readiness is refused before the first round, saying why", notYet, "/readyz", http.StatusServiceUnavailable, "not ready: the health monitor has not polled"},
		{"readiness answers after the first round", nil, "/readyz", http.StatusOK, "ok"},
		{"liveness answers after the first round", nil, "/healthz", http.StatusOK, "ok"},
		{"any other path is not found", nil, "/metrics", http.StatusNotFound, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			healthHandler(func() error { return tc.ready }).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.body) {
				t.Errorf("GET %s = %d %q, want %d with %q", tc.path, rec.Code, rec.Body.String(), tc.code, tc.body)
			}
		})
	}
}

// The agent's pod is Ready within a probe period of its health monitor's first round, not
// after a publishing interval nor an API server that answers (here it never does).
func TestTheAgentIsReadySoonAfterItStartsEvenWithoutTheAPIServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	started := time.Now()
	errOut, stop := startSimAgent(t, shortTempDir(t), "--health-probe-bind-address", addr, "--interval", "1m")
	var code int
	var body string
	for time.Since(started) < 5*time.Second {
		if res, err := http.Get("http://" + addr + "/readyz"); err == nil {
			b, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if code, body = res.StatusCode, string(b); code == http.StatusOK {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code != http.StatusOK {
		t.Fatalf("/readyz still %d %q 5 s after the start; the agent's stderr:\n%s", code, body, errOut.String())
	}
	t.Logf("ready %s after the start", time.Since(started).Round(time.Millisecond))
	if res, err := http.Get("http://" + addr + "/healthz"); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %v %v, want 200", res, err)
	} else {
		_ = res.Body.Close()
	}
	if c := stop(); c != ExitOK {
		t.Fatalf("exit %d:\n%s", c, errOut.String())
	}
	if res, err := http.Get("http://" + addr + "/healthz"); err == nil {
		_ = res.Body.Close()
		t.Error("the probes still answer after the agent stopped")
	}
}

func TestAProbeAddressInUseStopsTheAgentAtStart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	execute(t, "agent", "--sim", "h100x8", "--node-name", "n1", "--kubeconfig", unreachableKubeconfig(t),
		"--state-dir", shortTempDir(t), "--health-probe-bind-address", l.Addr().String()).
		check(t, ExitFail, nil, []string{"--health-probe-bind-address " + l.Addr().String(), "address already in use"})
}
