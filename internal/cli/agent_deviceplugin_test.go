package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestTheAgentRefusesABadDevicePluginConfiguration(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name     string
		file     string
		inStderr []string
	}{
		{"a file that does not exist", filepath.Join(dir, "missing.yaml"), []string{"--device-plugin-config", "no such file"}},
		{"a bad MIG strategy at its line", writeFile(t, dir, "mig.yaml", "version: v1\nflags:\n  migStrategy: split\n"), []string{"mig.yaml:3:", `migStrategy "split"`}},
		{"an unknown key at its line", writeFile(t, dir, "key.yaml", "version: v1\nsharing:\n  timeSlicing:\n    replicas: 2\n"), []string{"key.yaml:4:", "field replicas not found"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			execute(t, "agent", "--node-name", "n1", "--sim", "h100x8", "--kubeconfig", unreachableKubeconfig(t),
				"--device-plugin", "--device-plugin-config", c.file).check(t, ExitUsage, nil, c.inStderr)
		})
	}
}

// A time-slicing configuration renamed by default serves nvidia.com/gpu.shared on its own
// socket.
func TestTheAgentServesTheResourcesOfItsDevicePluginConfiguration(t *testing.T) {
	dir, err := os.MkdirTemp("", "dp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cfg := writeFile(t, t.TempDir(), "dp.yaml", "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errOut bytes.Buffer
	go func() {
		done <- Execute(ctx, []string{"agent", "--node-name", "n1", "--sim", "h100x8", "--interval", "100ms",
			"--kubeconfig", unreachableKubeconfig(t), "--device-plugin", "--device-plugin-dir", dir,
			"--device-plugin-config", cfg}, &out, &errOut)
	}()
	sock := filepath.Join(dir, "gpunode-gpu.shared.sock")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("no plugin socket %s within 10 s; stderr:\n%s", sock, errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut.String())
	}
	if !bytes.Contains(errOut.Bytes(), []byte("name=nvidia.com/gpu.shared devices=32")) {
		t.Errorf("the agent did not log the shared resource with 32 replicas:\n%s", errOut.String())
	}
}
