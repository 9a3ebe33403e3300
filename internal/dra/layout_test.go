package dra_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/internal/dra"
	"github.com/gpunode/gpunode/internal/gpu/nvml"
	"github.com/gpunode/gpunode/internal/gpu/nvml/nvmltest"
)

// migSwitch is go-nvml's DGX A100 mock whose GPU 0 is partitioned 3g + 2g while set(true)
// holds, and whole otherwise: a MIG layout changed outside the agent (nvidia-smi, mig-parted).
func migSwitch(t testing.TB) (*nvml.Backend, func(bool)) {
	t.Helper()
	lib, set, err := nvmltest.DGXA100MIGSwitch(0, nvmltest.MIG3g, nvmltest.MIG2g)
	if err != nil {
		t.Fatal(err)
	}
	b, err := nvml.New(nvml.WithLibrary(lib))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, set
}

// startOn runs a plugin over backend b that recomputes its slice without a health change
// only every resync, until the test ends; it returns the env whose client it publishes to.
func startOn(t testing.TB, b *nvml.Backend, resync time.Duration) (*env, *dra.Plugin) {
	t.Helper()
	e := newEnv(t, "h100x8") // its dirs and client; the backend is b
	p, err := dra.New(dra.Config{NodeName: node, Client: e.client, Backend: b, Health: e.health.read, Simulated: true,
		PluginDir: filepath.Join(e.dir, "plugin"), RegistryDir: filepath.Join(e.dir, "reg"), CDIDir: e.cdiDir, Resync: resync})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.dir, "reg"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return e, p
}

// sliceDevices is the device names of the node's one slice (nil while there is none).
func sliceDevices(e *env) []string {
	l, err := e.client.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		return nil
	}
	var out []string
	for _, d := range l.Items[0].Spec.Devices {
		out = append(out, d.Name)
	}
	return out
}

func migDevicesOf(names []string, gpu string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, gpu+"-mig-") {
			out = append(out, n)
		}
	}
	return out
}

// A GPU partitioned into MIG devices by someone else, with no health change and no resync
// due (an hour away), is republished as its MIG devices, and as a whole GPU again when the
// partition goes: the plugin follows the MIG layout itself.
func TestAMIGLayoutChangedOutsideTheAgentIsRepublishedWithoutAResync(t *testing.T) {
	b, set := migSwitch(t)
	e, _ := startOn(t, b, time.Hour)
	waitFor(t, "the slice with gpu-0 whole", func() bool { return slices.Contains(sliceDevices(e), "gpu-0") })
	set(true)
	waitFor(t, "gpu-0's two MIG devices in the slice", func() bool {
		d := sliceDevices(e)
		return len(migDevicesOf(d, "gpu-0")) == 2 && !slices.Contains(d, "gpu-0")
	})
	set(false)
	waitFor(t, "gpu-0 whole again", func() bool {
		d := sliceDevices(e)
		return slices.Contains(d, "gpu-0") && len(migDevicesOf(d, "gpu-0")) == 0
	})
}

// BenchmarkMIGChangeToSlice is one MIG layout change of GPU 0 (partitioned, then whole
// again) made outside the agent on go-nvml's DGX A100 mock, to the node's slice in the API
// (a fake clientset, watched) showing it, with no health change and no resync due. It
// reports the p50 and p99 of the two together; the poll's period (DefaultLayoutPoll) and
// one slice write bound them.
func BenchmarkMIGChangeToSlice(b *testing.B) {
	be, set := migSwitch(b)
	e, _ := startOn(b, be, time.Hour)
	ctx := context.Background()
	waitFor(b, "the node's slice", func() bool { return sliceDevices(e) != nil })
	w, err := e.client.ResourceV1().ResourceSlices().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	took := make([]time.Duration, 0, 2*b.N)
	step := func(mig bool) {
		// A change comes at any moment of the poll's period, not just after a read.
		b.StopTimer()
		time.Sleep(rand.N(dra.DefaultLayoutPoll))
		b.StartTimer()
		start := time.Now()
		set(mig)
		for ev := range w.ResultChan() {
			if s, ok := ev.Object.(*resourceapi.ResourceSlice); ok && len(s.Spec.Devices) > 0 && (s.Spec.Devices[0].Name != "gpu-0") == mig {
				break
			}
		}
		took = append(took, time.Since(start))
	}
	b.ResetTimer()
	for range b.N {
		step(true)
		step(false)
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
}
