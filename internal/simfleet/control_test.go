package simfleet

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// shortDir is a temporary folder with a path short enough for a unix socket.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// controlOnly is a fleet with simulated GPUs and the control socket, and no API server.
func controlOnly(t *testing.T) (*Fleet, *sim.Backend) {
	t.Helper()
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	f := &Fleet{cfg: Config{StateDir: shortDir(t), Log: slog.New(slog.DiscardHandler)}, byName: map[string]*simNode{}}
	n := &simNode{name: NodeName(0), backend: b}
	f.nodes, f.byName[n.name] = []*simNode{n}, n
	ctx, cancel := context.WithCancel(context.Background())
	if err := f.serveControl(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); f.wg.Wait() })
	return f, b
}

func TestTheControlSocketInjectsFaultsAndSaysWhyItRefuses(t *testing.T) {
	f, b := controlOnly(t)
	cases := []struct {
		name    string
		req     InjectRequest
		wantErr error
		inErr   string
	}{
		{"an xid on an existing GPU is injected", InjectRequest{Node: "sim-001", Fault: Fault{GPU: 3, Type: "xid", XID: 95}}, nil, ""},
		{"an unknown node is refused naming the fleet's nodes", InjectRequest{Node: "sim-009", Fault: Fault{GPU: 0, Type: "xid", XID: 95}},
			ErrUnknownNode, `"sim-009" (the fleet's nodes: sim-001 to sim-001)`},
		{"a GPU index past the node's GPUs is refused", InjectRequest{Node: "sim-001", Fault: Fault{GPU: 8, Type: "xid", XID: 95}},
			ErrInvalidFault, "gpu"},
		{"an unknown fault type is refused", InjectRequest{Node: "sim-001", Fault: Fault{GPU: 0, Type: "melted"}},
			ErrInvalidFault, "melted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := Inject(context.Background(), f.cfg.StateDir, tc.req)
			if tc.wantErr == nil {
				if err != nil || resp.At.IsZero() || resp.Node != tc.req.Node {
					t.Fatalf("Inject = %+v, %v; want it injected with a time", resp, err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.inErr) {
				t.Fatalf("Inject error %v, want %v saying %q", err, tc.wantErr, tc.inErr)
			}
		})
	}
	found := false
	for _, l := range b.KernelLog() {
		found = found || strings.Contains(l.Text, "Xid") && strings.Contains(l.Text, "95")
	}
	if !found {
		t.Errorf("the node's kernel log has no Xid 95 line after the injection: %v", b.KernelLog())
	}
}

func TestInjectWithoutARunningFleetSaysHowToStartOne(t *testing.T) {
	_, err := Inject(context.Background(), shortDir(t), InjectRequest{Node: "sim-001", Fault: Fault{Type: "xid", XID: 79}})
	if !errors.Is(err, ErrNoFleet) || !strings.Contains(err.Error(), "gpunode sim fleet") {
		t.Fatalf("error %v, want ErrNoFleet naming gpunode sim fleet", err)
	}
}

func TestAStateFolderARunningFleetUsesIsRefused(t *testing.T) {
	f, _ := controlOnly(t)
	err := prepareStateDir(context.Background(), f.cfg.StateDir)
	if err == nil || !strings.Contains(err.Error(), "already runs") {
		t.Fatalf("prepareStateDir of a running fleet's folder = %v, want a refusal", err)
	}
}

func TestWhatAStoppedFleetLeftIsClearedAtTheNextStart(t *testing.T) {
	dir := shortDir(t)
	for _, p := range []string{SocketFile, KubeconfigFile, nodesDir + "/sim-001/remediation-step.json"} {
		path := dir + "/" + p
		if err := os.MkdirAll(path[:strings.LastIndex(path, "/")], 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("left over"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := prepareStateDir(context.Background(), dir); err != nil {
		t.Fatalf("a folder whose socket nobody answers on was refused: %v", err)
	}
	for _, p := range []string{SocketFile, KubeconfigFile, nodesDir} {
		if _, err := os.Stat(dir + "/" + p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s remains (%v)", p, err)
		}
	}
}
