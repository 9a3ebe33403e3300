package dra_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/gpunode/gpunode/internal/cdispec"
	"github.com/gpunode/gpunode/internal/dra"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/nvml"
	"github.com/gpunode/gpunode/internal/monitor"
)

// EnvCDIOut, when set, is where the real-GPU test leaves the claim's CDI spec (for the
// record); by default it is written into a temporary folder.
const EnvCDIOut = "GPUNODE_DRA_CDI_OUT"

// On a host with NVIDIA GPUs: a claim for GPU 0, prepared with the real NVML backend and the
// host's driver files, gets a CDI spec the CDI library accepts and injects into an OCI spec
// with GPU 0's device node, the control nodes and the driver's libraries. Without a driver
// it skips and says so.
func TestPrepareOnTheRealGPU(t *testing.T) {
	t.Setenv(nvml.EnvLibraryPath, "")
	b, err := nvml.New()
	if errors.Is(err, gpu.ErrDriverNotFound) {
		t.Skipf("no NVIDIA driver on this host: %v", err)
	}
	if err != nil {
		t.Fatalf("nvml: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	dir, err := os.MkdirTemp("", "dra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cdiDir := filepath.Join(dir, "cdi")
	if out := os.Getenv(EnvCDIOut); out != "" {
		cdiDir = out
	}
	p, err := dra.New(dra.Config{NodeName: "this-host", Client: fake.NewClientset(), Backend: b,
		Health: func() []monitor.GPUHealth { return nil }, Root: os.DirFS("/"), PCIeRoot: dra.PCIeRootUnder("/"),
		PluginDir: filepath.Join(dir, "plugin"), CDIDir: cdiDir})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "plugin"), 0o750); err != nil {
		t.Fatal(err)
	}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "h200", UID: "real-gpu-claim"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: dra.DriverName, Pool: "this-host", Device: "gpu-0"}}}}}}
	ctx := context.Background()
	var took []time.Duration
	for i := range 20 { // the first discovers the host's driver files; the others are idempotent repeats
		start := time.Now()
		res, err := p.Preparer().Prepare(ctx, []*resourceapi.ResourceClaim{claim})
		took = append(took, time.Since(start))
		if err != nil {
			t.Fatal(err)
		}
		if r := res[claim.UID]; r.Err != nil || len(r.Devices) != 1 {
			t.Fatalf("prepare %d: %+v", i, r)
		}
	}
	t.Logf("Prepare of one real GPU: first %v (host discovery), then median %v", took[0], median(took[1:]))
	inv := p.Inventory()
	out, _ := json.MarshalIndent(inv.Devices, "", "  ")
	t.Logf("the host's devices as published:\n%s", out)

	id := cdispec.ClaimDeviceID(string(claim.UID), "gpu-0")
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(cdiDir), cdiapi.WithAutoRefresh(false))
	if err != nil || len(cache.GetErrors()) > 0 {
		t.Fatalf("CDI cache over %s: %v %v", cdiDir, err, cache.GetErrors())
	}
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	if unresolved, err := cache.InjectDevices(spec, id); err != nil {
		t.Fatalf("inject %s: unresolved %v: %v", id, unresolved, err)
	}
	var nodes, mounts []string
	for _, d := range spec.Linux.Devices {
		nodes = append(nodes, d.Path)
	}
	for _, m := range spec.Mounts {
		mounts = append(mounts, m.Destination)
	}
	t.Logf("%s injects device nodes %v and %d mounts", id, nodes, len(mounts))
	if !slices.ContainsFunc(nodes, func(n string) bool {
		return strings.HasPrefix(n, "/dev/nvidia") && strings.TrimLeft(n[len("/dev/nvidia"):], "0123456789") == "" && n != "/dev/nvidia"
	}) ||
		!slices.Contains(nodes, "/dev/nvidiactl") {
		t.Errorf("device nodes %v: want a /dev/nvidia<minor> and /dev/nvidiactl", nodes)
	}
	if !slices.ContainsFunc(mounts, func(m string) bool { return strings.Contains(m, "libnvidia-ml.so") }) {
		t.Errorf("mounts %v: want the driver's libnvidia-ml", mounts)
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
