package cli

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/gpunode/gpunode/internal/deviceplugin"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/labels"
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

// On simulated GPUs the cdi strategies start and write a spec the CDI library accepts,
// naming every GPU (its nodes are the host's /dev/null): there is no driver to discover.
func TestTheAgentOnSimulatedGPUsWritesTheCDISpecOfEveryGPU(t *testing.T) {
	for _, strategy := range []string{"cdi-cri", "cdi-annotations"} {
		t.Run("strategy "+strategy, func(t *testing.T) {
			pluginDir, err := os.MkdirTemp("", "dp")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(pluginDir) })
			specDir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int, 1)
			var out, errOut bytes.Buffer
			go func() {
				done <- Execute(ctx, []string{"agent", "--sim", "h100x8", "--node-name", "n1", "--interval", "100ms",
					"--kubeconfig", unreachableKubeconfig(t), "--state-dir", t.TempDir(), "--device-plugin",
					"--device-plugin-dir", pluginDir, "--device-plugin-strategy", strategy, "--cdi-spec-dir", specDir}, &out, &errOut)
			}()
			path := filepath.Join(specDir, "gpunode-nvidia.com-gpu.json")
			sock := filepath.Join(pluginDir, "gpunode-gpu.sock")
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, specErr := os.Stat(path)
				_, sockErr := os.Stat(sock)
				if specErr == nil && sockErr == nil {
					break
				}
				select {
				case code := <-done:
					cancel()
					t.Fatalf("the agent exited %d before serving; stderr:\n%s", code, errOut.String())
				default:
				}
				if time.Now().After(deadline) {
					cancel()
					<-done
					t.Fatalf("no spec %s and plugin socket within 10 s; stderr:\n%s", path, errOut.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			if code := <-done; code != ExitOK {
				t.Fatalf("exit %d; stderr:\n%s", code, errOut.String())
			}
			spec, err := cdiapi.ReadSpec(path, 0)
			if err != nil {
				t.Fatalf("the CDI library refuses %s: %v", path, err)
			}
			b, err := sim.Load("h100x8")
			if err != nil {
				t.Fatal(err)
			}
			snap, err := b.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range snap.Devices {
				dev := spec.GetDevice(d.UUID)
				if dev == nil {
					t.Errorf("the spec does not name GPU %d (%s)", d.Index, d.UUID)
					continue
				}
				if n := dev.ContainerEdits.DeviceNodes; len(n) != 1 || n[0].Path != fmt.Sprintf("/dev/nvidia%d", d.Index) || n[0].HostPath != "/dev/null" {
					t.Errorf("GPU %d's nodes %+v, want /dev/nvidia%d backed by /dev/null", d.Index, n, d.Index)
				}
			}
		})
	}
}

// --mig-strategy is what the node says (nvidia.com/mig.strategy) and what the agent's own
// device plugin serves; it wins over the configuration file's flags.migStrategy.
func TestTheMIGStrategyFlagSetsTheLabelAndTheDevicePlugin(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}).Build()
	dir := t.TempDir()
	single := writeFile(t, dir, "single.yaml", "version: v1\nflags:\n  migStrategy: single\n")
	cases := []struct {
		name   string
		plugin bool
		file   string
		flag   string
		want   string
	}{
		{"without the agent's device plugin the flag alone sets the label", false, "", labels.MIGStrategyMixed, labels.MIGStrategyMixed},
		{"without the flag and the agent's device plugin the label keeps its default", false, "", "", ""},
		{"the flag wins over the configuration file's strategy", true, single, labels.MIGStrategyMixed, labels.MIGStrategyMixed},
		{"the configuration file's strategy serves when the flag is not given", true, single, "", labels.MIGStrategySingle},
		{"the flag serves without a configuration file", true, "", labels.MIGStrategySingle, labels.MIGStrategySingle},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := &pluginOptions{enabled: tc.plugin, config: tc.file, mig: tc.flag}
			if err := o.checkMIG(); err != nil {
				t.Fatalf("--mig-strategy %q refused: %v", tc.flag, err)
			}
			var s *deviceplugin.Sharing
			if tc.plugin {
				got, err := o.sharing(context.Background(), c, "n1", slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				if got.MIGStrategy != tc.want {
					t.Errorf("the device plugin serves MIG strategy %q, want %q", got.MIGStrategy, tc.want)
				}
				s = &got
			}
			if got := o.labelConfig(s).MIGStrategy; got != tc.want {
				t.Errorf("the labels' MIG strategy is %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTheAgentRefusesAnUnknownMIGStrategy(t *testing.T) {
	execute(t, "agent", "--node-name", "n1", "--sim", "h100x8", "--kubeconfig", unreachableKubeconfig(t),
		"--mig-strategy", "split").check(t, ExitUsage, nil, []string{`--mig-strategy "split"`, "none single mixed"})
}
