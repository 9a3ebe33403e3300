package evidence

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/podresources"
)

type podMap map[string][]podresources.Pod

func (m podMap) PodsFor(uuid string) []podresources.Pod { return m[uuid] }

// stuckBackend blocks in Snapshot until released: a GPU whose library call hangs.
type stuckBackend struct{ release chan struct{} }

func (stuckBackend) Name() string { return "stuck" }
func (stuckBackend) Close() error { return nil }
func (b stuckBackend) Snapshot(context.Context) (*gpu.Snapshot, error) {
	<-b.release // ignores its context, as a call blocked in a driver does
	return nil, nil
}

type failingBackend struct{}

func (failingBackend) Name() string { return "nvml" }
func (failingBackend) Close() error { return nil }
func (failingBackend) Snapshot(context.Context) (*gpu.Snapshot, error) {
	return nil, gpu.ErrDriverNotFound
}

func hostRoot() fstest.MapFS {
	return fstest.MapFS{
		"proc/sys/kernel/random/boot_id": {Data: []byte("0f5c3c1e-8b52-4f57-9d2e-6f0e4f1a9b11\n")},
		"proc/sys/kernel/osrelease":      {Data: []byte("6.8.0-49-generic\n")},
		"proc/sys/kernel/hostname":       {Data: []byte("gpu-node-07\n")},
	}
}

func TestCollectGathersEverySource(t *testing.T) {
	s, err := sim.PresetScenario("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	b, err := sim.New(s, sim.WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	snap := simSnapshot(t)
	uuid := snap.Devices[3].UUID
	ring := kernelLog(kernelLines(40))
	trig := xid79(uuid)
	c := Collector{
		Node: NodeFacts{Node: "gpu-node-07", Agent: "test"}, Root: hostRoot(), Backend: b, Kernel: ring,
		Before: 5 * time.Second, Findings: func() []health.Finding { return []health.Finding{trig} },
		Health: func() *HealthState { return &HealthState{} },
		Pods: podMap{uuid: {{Namespace: "train", Name: "llama-0", Container: "trainer"}},
			snap.Devices[0].UUID: {{Namespace: "other", Name: "unaffected"}}},
		Clock: fixedClock,
	}
	got := c.Collect(context.Background(), trig, snap)
	if len(got.Errors) != 0 {
		t.Fatalf("errors %v from working sources", got.Errors)
	}
	n := got.Node
	if n.BootID == "" || n.Kernel != "6.8.0-49-generic" || n.Hostname != "gpu-node-07" || n.DriverVersion == "" || n.Backend != "sim" {
		t.Errorf("node facts %+v: want boot id, kernel, hostname and driver filled", n)
	}
	if len(got.Snapshots) != 2 {
		t.Errorf("%d snapshots, want the one taken now and the earlier one", len(got.Snapshots))
	}
	// Window: 5 s before the event to the capture, 3 s after it.
	if len(got.Kernel) != 9 || !got.Kernel[0].Time.Equal(eventAt.Add(-5*time.Second)) {
		t.Errorf("%d kernel records from %v, want the 9 of [event-5s, event+3s]", len(got.Kernel), got.Kernel[0].Time)
	}
	if len(got.Pods) != 1 || got.Pods[0].Name != "llama-0" || got.Pods[0].GPU != uuid {
		t.Errorf("pods %v: want only the pod on the faulty GPU", got.Pods)
	}
	if _, err := Build(got, Limits{}); err != nil {
		t.Errorf("collected contents do not build: %v", err)
	}
}

func TestCollectRecordsFailingSourcesAndGoesOn(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	root := hostRoot()
	delete(root, "proc/sys/kernel/osrelease")
	tests := []struct {
		name    string
		backend gpu.Backend
		want    map[string]string
	}{
		{"a backend that hangs is cut off at the timeout", stuckBackend{release}, map[string]string{SourceGPU: "did not answer in time", SourceRelease: "osrelease"}},
		{"a backend that fails is recorded with its name", failingBackend{}, map[string]string{SourceGPU: "nvml snapshot: NVIDIA driver not found", SourceRelease: "osrelease"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Collector{Node: NodeFacts{Node: "n1"}, Root: root, Backend: tc.backend, Kernel: kernelLog(nil), Timeout: 50 * time.Millisecond, Clock: fixedClock}
			t0 := time.Now()
			got := c.Collect(context.Background(), xid79("GPU-1"))
			if d := time.Since(t0); d > 2*time.Second {
				t.Errorf("Collect took %s with a 50 ms timeout", d)
			}
			for src, frag := range tc.want {
				if !strings.Contains(got.Errors[src], frag) {
					t.Errorf("error of %s = %q, want it to contain %q", src, got.Errors[src], frag)
				}
			}
			if got.Node.BootID == "" {
				t.Error("the boot id was not read although its file is there")
			}
			if len(got.Errors) != len(tc.want) {
				t.Errorf("errors %v, want only %v", got.Errors, tc.want)
			}
		})
	}
}

// In a pod without hostNetwork, /proc/sys/kernel/hostname (even through the node's procfs)
// is the pod's UTS namespace: the pod's name. The node's /etc/hostname names the node.
func TestTheHostnameIsTheNodesNotThePods(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string
		inErr []string
	}{
		{"the node's /etc/hostname wins over the pod's kernel hostname",
			map[string]string{"etc/hostname": "gpu-node-07\n", "proc/sys/kernel/hostname": "gpunode-agent-x7k2p\n"}, "gpu-node-07", nil},
		{"without /etc/hostname the kernel hostname is taken",
			map[string]string{"proc/sys/kernel/hostname": "gpu-node-07\n"}, "gpu-node-07", nil},
		{"an empty /etc/hostname falls through to the kernel hostname",
			map[string]string{"etc/hostname": "\n", "proc/sys/kernel/hostname": "gpu-node-07\n"}, "gpu-node-07", nil},
		{"neither file: the error names both", nil, "", []string{"/etc/hostname", "/proc/sys/kernel/hostname"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := fstest.MapFS{}
			for p, s := range tc.files {
				root[p] = &fstest.MapFile{Data: []byte(s)}
			}
			got := Collector{Node: NodeFacts{Node: "gpu-node-07"}, Root: root, Clock: fixedClock}.Collect(context.Background(), xid79("GPU-0"))
			if got.Node.Hostname != tc.want {
				t.Errorf("hostname = %q, want %q", got.Node.Hostname, tc.want)
			}
			for _, s := range tc.inErr {
				if !strings.Contains(got.Errors[SourceHostname], s) {
					t.Errorf("hostname error %q does not name %s", got.Errors[SourceHostname], s)
				}
			}
		})
	}
}
