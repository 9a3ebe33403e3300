package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestChooseGPUAPI(t *testing.T) {
	tests := []struct {
		name    string
		label   string
		dra     bool
		want    string
		ignored bool
	}{
		{"an agent with --dra on an unlabelled node serves DRA", "", true, gpuAPIDRA, false},
		{"an agent without --dra on an unlabelled node serves the device plugin", "", false, gpuAPIDevicePlugin, false},
		{"the device-plugin label keeps a node on the device plugin under --dra", "device-plugin", true, gpuAPIDevicePlugin, false},
		{"the dra label with --dra serves DRA", "dra", true, gpuAPIDRA, false},
		{"the dra label without --dra is reported and the device plugin serves", "dra", false, gpuAPIDevicePlugin, true},
		{"an unknown label value is reported and the default serves", "both", true, gpuAPIDRA, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chooseGPUAPI(tt.label, tt.dra)
			if got != tt.want || (err != nil) != tt.ignored {
				t.Errorf("chooseGPUAPI(%q, %v) = %q, %v; want %q, reported %v", tt.label, tt.dra, got, err, tt.want, tt.ignored)
			}
		})
	}
}

// With --dra and --device-plugin on an unlabelled node the agent serves DRA alone: its DRA
// socket and registration socket appear, no device-plugin socket does. The API server is
// unreachable: the plugin still serves the kubelet (the slice waits for the API).
func TestTheAgentWithDRAServesTheDRAPluginInsteadOfTheDevicePlugin(t *testing.T) {
	dir, err := os.MkdirTemp("", "dra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for _, d := range []string{"dp", "reg"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errOut bytes.Buffer
	go func() {
		done <- Execute(ctx, []string{"agent", "--node-name", "n1", "--sim", "h100x8", "--interval", "100ms",
			"--kubeconfig", unreachableKubeconfig(t), "--device-plugin", "--device-plugin-dir", filepath.Join(dir, "dp"),
			"--dra", "--dra-plugin-dir", filepath.Join(dir, "plugin"), "--dra-registry-dir", filepath.Join(dir, "reg"),
			"--dra-cdi-dir", filepath.Join(dir, "cdi"), "--dra-pod-uid", ""}, &out, &errOut)
	}()
	for _, sock := range []string{filepath.Join(dir, "plugin", "dra.sock"), filepath.Join(dir, "reg", "gpu.gpunode.dev-reg.sock")} {
		for {
			if _, err := os.Stat(sock); err == nil {
				break
			}
			select {
			case code := <-done:
				t.Fatalf("the agent exited %d before serving %s; stderr:\n%s", code, sock, errOut.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, "dp"))
	if err != nil || len(entries) != 0 {
		t.Errorf("the device-plugins folder has %v (%v): the device plugin must not run beside DRA", entries, err)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut.String())
	}
	if !bytes.Contains(errOut.Bytes(), []byte("api=dra")) {
		t.Errorf("the agent did not log the API it serves:\n%s", errOut.String())
	}
}

// The flag that chose NoExecute is gone: the policy says it now, and an agent given the
// flag says so rather than run with a choice it would not honour.
func TestTheAgentRefusesTheRemovedDRAEvictFlagAndNamesThePolicyField(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Execute(context.Background(), []string{"agent", "--node-name", "n1", "--sim", "h100x8",
		"--kubeconfig", unreachableKubeconfig(t), "--dra", "--dra-evict"}, &out, &errOut)
	if code != ExitUsage || !strings.Contains(errOut.String(), "spec.dra.unhealthyEffect") {
		t.Errorf("exit %d, stderr %q: want %d naming spec.dra.unhealthyEffect", code, errOut.String(), ExitUsage)
	}
}
