package doctor

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/cdi"
	"github.com/gpunode/gpunode/internal/host/containerd"
)

const healthyModules = "nvidia_uvm 1 0 - Live\nnvidia_modeset 1 0 - Live\nnvidia 1 2 nvidia_uvm, Live\n"

// healthy is a working node: every probe passes.
func healthy() Facts {
	yes := true
	return Facts{
		Modules:           healthyModules,
		DriverVersionFile: "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05\n",
		DevNodes:          []string{"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"},
		GPUs:              2,
		Snapshot:          &gpu.Snapshot{Backend: "test", Devices: []gpu.Device{device(0), device(1)}},
		Host: &host.Facts{
			SecureBoot: host.SecureBoot{State: host.SecureBootEnabled},
			Containerd: host.Containerd{Installed: true, Version: "1.7.22", Config: &containerd.Config{
				Path: "/etc/containerd/config.toml", NvidiaRuntime: true, NvidiaDefault: true, EnableCDI: &yes,
				Runtimes: []containerd.Runtime{{Name: "nvidia", BinaryName: "/usr/bin/nvidia-container-runtime", Nvidia: true}},
			}},
			CDI: cdi.Report{Specs: []cdi.SpecFile{{Path: "/var/run/cdi/nvidia.yaml", Kind: "nvidia.com/gpu", Devices: []string{"0", "1"}}}},
		},
		RuntimeBinaryExists:   map[string]bool{"/usr/bin/nvidia-container-runtime": true},
		KubeletDir:            "/var/lib/kubelet",
		KubeletSocket:         true,
		PluginSockets:         []string{"nvidia-gpu.sock"},
		PodResourcesSock:      true,
		ExporterURL:           "http://127.0.0.1:9400/metrics",
		ExporterHasGPUMetrics: true,
	}
}

func TestDiagnose(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(f *Facts)
		layer  int
		cause  string // a fragment of the most likely cause
	}{
		{"a working node has no broken layer", func(*Facts) {}, 0, ""},
		{"a module rejected by Secure Boot is found in the kernel log", func(f *Facts) {
			f.Modules = "ext4 1 0 - Live\n"
			f.KernelLog = []string{"nvidia: module verification failed: signature and/or required key missing - tainting kernel", "Lockdown: modprobe: unsigned module loading is restricted"}
		}, 1, "Secure Boot rejected"},
		{"a module built for another kernel is found in the kernel log", func(f *Facts) {
			f.Modules = ""
			f.KernelLog = []string{"nvidia: Unknown symbol drm_gem_object_free (err -2)"}
		}, 1, "different kernel"},
		{"nouveau holding the GPUs is named", func(f *Facts) { f.Modules = "nouveau 1 0 - Live\n" }, 1, "nouveau"},
		{"a missing module on a Secure Boot host with no log line points at signing", func(f *Facts) { f.Modules = "" }, 1, "Secure Boot is on"},
		{"a loaded module without device nodes is broken", func(f *Facts) { f.DevNodes = nil }, 1, "device nodes were not created"},
		{"a library/module version mismatch is named", func(f *Facts) {
			f.NVMLErr = errors.New("initialising NVML: nvmlInit: Driver/library version mismatch")
			f.KernelLog = []string{"NVRM: API mismatch: the client has the version 580.95.05, but this kernel module has the version 570.86.15."}
		}, 1, "different versions"},
		{"NVML seeing no GPU is broken", func(f *Facts) { f.GPUs = 0 }, 1, "no GPU is bound"},
		{"containerd not patched by the toolkit breaks layer 2", func(f *Facts) {
			c := *f.Host.Containerd.Config
			c.NvidiaRuntime, c.EnableCDI = false, nil
			f.Host.Containerd.Config = &c
		}, 2, "did not patch"},
		{"a runtime binary that is not installed breaks layer 2", func(f *Facts) {
			f.RuntimeBinaryExists["/usr/bin/nvidia-container-runtime"] = false
		}, 2, "not installed"},
		{"a stale CDI spec breaks layer 2", func(f *Facts) {
			f.Host.CDI.Specs[0].Stale = []cdi.StaleRef{{Device: "GPU-x", Kind: cdi.RefGPUUUID, Missing: "GPU-x"}}
		}, 2, "wrong device paths"},
		{"CDI enabled without a GPU spec breaks layer 2", func(f *Facts) {
			c := *f.Host.Containerd.Config
			c.NvidiaRuntime = false
			f.Host.Containerd.Config = &c
			f.Host.CDI.Specs = nil
		}, 2, "nothing generated"},
		{"a kubelet that is not running breaks layer 3", func(f *Facts) { f.KubeletSocket = false }, 3, "kubelet is not running"},
		{"no registered device plugin breaks layer 3", func(f *Facts) { f.PluginSockets = nil }, 3, "device plugin is not running"},
		{"an exporter without GPU metrics breaks layer 4", func(f *Facts) { f.ExporterHasGPUMetrics = false }, 4, "cannot read the GPUs"},
		{"no exporter at all only warns", func(f *Facts) { f.ExporterErr = errors.New("connection refused") }, 0, ""},
		{"a host without containerd or kubelet only warns", func(f *Facts) {
			f.Host.Containerd = host.Containerd{}
			f.KubeletDir = ""
		}, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := healthy()
			tc.mutate(&f)
			r := Diagnose(f)
			if r.BrokenLayer != tc.layer {
				t.Fatalf("broken layer %d, want %d (%s; probes %+v)", r.BrokenLayer, tc.layer, r.Verdict, r.Probes)
			}
			if !strings.Contains(r.Cause, tc.cause) {
				t.Errorf("cause %q does not contain %q", r.Cause, tc.cause)
			}
			if tc.layer != 0 && r.Fix == "" {
				t.Error("a broken layer without a fix")
			}
			for _, p := range r.Probes {
				if tc.layer != 0 && p.Layer > tc.layer && p.Status != Skipped {
					t.Errorf("layer %d probed above the broken layer %d: %+v", p.Layer, tc.layer, p)
				}
			}
		})
	}
}
