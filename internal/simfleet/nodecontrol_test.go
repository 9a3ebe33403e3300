package simfleet

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// nodeControl serves one agent's node, gpu-7 on 8 simulated H100s, on a real unix socket.
func nodeControl(t *testing.T, sock string) (*sim.Backend, context.CancelFunc, <-chan error) {
	t.Helper()
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := ListenControl(ctx, sock, Node{Name: "gpu-7", Backend: b})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("the control socket stopped: %v", err)
		}
	})
	return b, cancel, done
}

func TestAnAgentsControlSocketInjectsIntoItsOwnNodeOnly(t *testing.T) {
	sock := filepath.Join(shortDir(t), "sim.sock")
	b, _, _ := nodeControl(t, sock)
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %s: %v, %v; want owner-only", sock, fi, err)
	}
	cases := []struct {
		name    string
		req     InjectRequest
		wantErr error
		inErr   string
	}{
		{"an xid on one of its GPUs is injected", InjectRequest{Node: "gpu-7", Fault: Fault{GPU: 0, Type: "xid", XID: 79}}, nil, ""},
		{"another node is refused naming the agent's", InjectRequest{Node: "gpu-8", Fault: Fault{GPU: 0, Type: "xid", XID: 79}},
			ErrUnknownNode, `"gpu-8" (this agent's node is gpu-7)`},
		{"a GPU past the node's eight is refused", InjectRequest{Node: "gpu-7", Fault: Fault{GPU: 8, Type: "xid", XID: 79}},
			ErrInvalidFault, "gpu"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := InjectAt(context.Background(), sock, tc.req)
			if tc.wantErr == nil {
				if err != nil || resp.At.IsZero() || resp.Node != "gpu-7" {
					t.Fatalf("InjectAt = %+v, %v; want it injected with a time", resp, err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.inErr) {
				t.Fatalf("InjectAt error %v, want %v saying %q", err, tc.wantErr, tc.inErr)
			}
		})
	}
	found := false
	for _, l := range b.KernelLog() {
		found = found || strings.Contains(l.Text, "Xid") && strings.Contains(l.Text, "79")
	}
	if !found {
		t.Errorf("the node's kernel log has no Xid 79 line after the injection: %v", b.KernelLog())
	}
}

func TestAnAgentsControlSocketReplacesAStaleOneAndRefusesALiveOne(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "sim.sock")
	// A socket file left by an agent that died: bound, then abandoned without unlinking.
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = l.Close()
	_, cancel, done := nodeControl(t, sock)
	if _, err := InjectAt(context.Background(), sock, InjectRequest{Node: "gpu-7", Fault: Fault{GPU: 1, Type: "xid", XID: 48}}); err != nil {
		t.Fatalf("inject through the socket that replaced a stale one: %v", err)
	}
	if _, err := ListenControl(context.Background(), sock, Node{Name: "other"}); err == nil || !strings.Contains(err.Error(), "another process serves it") {
		t.Errorf("a second server on a live socket: %v, want refused", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after its context ended: %v", err)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket remains after the server stopped: %v", err)
	}
	_, err = InjectAt(context.Background(), sock, InjectRequest{Node: "gpu-7", Fault: Fault{GPU: 0, Type: "xid", XID: 79}})
	if !errors.Is(err, ErrNoControl) || !strings.Contains(err.Error(), sock) {
		t.Errorf("inject with nothing serving: %v, want ErrNoControl naming the socket", err)
	}
}
