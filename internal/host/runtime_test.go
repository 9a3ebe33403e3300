package host

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpunode/gpunode/internal/host/cdi"
	"github.com/gpunode/gpunode/internal/host/containerd"
)

func TestContainerd(t *testing.T) {
	cases := []struct {
		name      string
		tree      string
		installed bool
		version   string
		nvidia    bool
		nvDefault bool
	}{
		{"the H100 node runs containerd 1.7.27 with nvidia as the default runtime", treeH100, true, "1.7.27", true, true},
		{"the VM has no containerd", treeVM, false, "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := readTree(t, tc.tree)
			c := f.Containerd
			if c.Installed != tc.installed || c.Version != tc.version {
				t.Errorf("containerd = %+v, want installed %v version %q", c, tc.installed, tc.version)
			}
			gotNvidia := c.Config != nil && c.Config.NvidiaRuntime
			gotDefault := c.Config != nil && c.Config.NvidiaDefault
			if gotNvidia != tc.nvidia || gotDefault != tc.nvDefault {
				t.Errorf("nvidia runtime %v default %v, want %v %v (config %+v)", gotNvidia, gotDefault, tc.nvidia, tc.nvDefault, c.Config)
			}
		})
	}
}

func TestContainerdVersionFailureIsRecorded(t *testing.T) {
	cases := []struct {
		name string
		exec func(context.Context, string, ...string) ([]byte, error)
		want string
	}{
		{"a binary that fails to run is recorded with its path", func(context.Context, string, ...string) ([]byte, error) {
			return nil, errors.New("exec format error")
		}, "/usr/bin/containerd --version: exec format error"},
		{"output that names no version is recorded", func(context.Context, string, ...string) ([]byte, error) {
			return []byte("Segmentation fault\n"), nil
		}, `parse containerd version from "(18 bytes not shown)"`},
		{"a reader without exec says so", nil, "no exec function"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestReader(t, treeH100, nil)
			r.Exec = tc.exec
			f, err := r.Read(context.Background(), Options{}, h100GPUs)
			if err != nil {
				t.Fatal(err)
			}
			e := f.Err(FactContainerdVersion)
			if e == nil || !strings.Contains(e.Message, tc.want) || !f.Containerd.Installed {
				t.Errorf("error = %+v, installed %v; want %q", e, f.Containerd.Installed, tc.want)
			}
		})
	}
}

func TestCDISpecsAgainstTheHost(t *testing.T) {
	cases := []struct {
		name    string
		tree    string
		gpus    []GPURef
		checked bool
		specs   []cdi.SpecFile
	}{
		{"the H100 node's spec names its 8 GPUs and nothing is stale", treeH100, h100GPUs, true, []cdi.SpecFile{{
			Path: "/etc/cdi/nvidia.yaml", Version: "0.5.0", Kind: "nvidia.com/gpu",
			Devices: append(uuidNames(8), "all"),
		}}},
		{"the H100 node's spec is stale once a GPU is gone", treeH100, h100GPUs[:7], true, []cdi.SpecFile{{
			Path: "/etc/cdi/nvidia.yaml", Version: "0.5.0", Kind: "nvidia.com/gpu",
			Devices: append(uuidNames(8), "all"),
			Stale: []cdi.StaleRef{{Device: "GPU-00000000-0000-0000-0000-000000000007", Kind: cdi.RefGPUUUID,
				Missing: "GPU-00000000-0000-0000-0000-000000000007"}},
		}}},
		{"without a GPU list UUIDs are not checked", treeH100, nil, false, []cdi.SpecFile{{
			Path: "/etc/cdi/nvidia.yaml", Version: "0.5.0", Kind: "nvidia.com/gpu",
			Devices: append(uuidNames(8), "all"),
		}}},
		{"the VM's runtime spec names a GPU and a device node it does not have", treeVM, vmGPUs, true, []cdi.SpecFile{{
			Path: "/var/run/cdi/nvidia.yaml", Priority: 1, Version: "0.6.0", Kind: "nvidia.com/gpu", Devices: []string{"0"},
			Stale: []cdi.StaleRef{
				{Device: "0", Kind: cdi.RefGPUUUID, Missing: "GPU-deadbeef-0000-4000-8000-000000000001"},
				{Device: "0", Kind: cdi.RefDeviceNode, Missing: "/dev/nvidia3"},
			},
		}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := newTestReader(t, tc.tree, nil).Read(context.Background(), Options{}, tc.gpus)
			if err != nil {
				t.Fatal(err)
			}
			if f.CDI.UUIDsChecked != tc.checked || !reflect.DeepEqual(f.CDI.Specs, tc.specs) {
				t.Errorf("cdi = %+v\nwant checked %v specs %+v", f.CDI, tc.checked, tc.specs)
			}
		})
	}
}

func uuidNames(n int) []string {
	var out []string
	for _, g := range h100GPUs[:n] {
		out = append(out, g.UUID)
	}
	return out
}

func TestKubelet(t *testing.T) {
	cases := []struct {
		name     string
		tree     string
		want     Kubelet
		reserves bool
	}{
		{"the H100 node's kubelet reserves CPU and memory and pins to NUMA", treeH100, Kubelet{
			ConfigPath:            "/var/lib/kubelet/config.yaml",
			KubeReserved:          map[string]string{"cpu": "1", "memory": "2Gi"},
			SystemReserved:        map[string]string{"cpu": "1", "memory": "2Gi"},
			EvictionHard:          map[string]string{"memory.available": "1Gi", "nodefs.available": "10%"},
			MaxPods:               110,
			CPUManagerPolicy:      "static",
			TopologyManagerPolicy: "single-numa-node",
			TopologyManagerScope:  "pod",
			MemoryManagerPolicy:   "Static",
			CgroupDriver:          "systemd",
		}, true},
		{"the VM has no kubelet config", treeVM, Kubelet{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := readTree(t, tc.tree)
			if !reflect.DeepEqual(f.Kubelet, tc.want) {
				t.Errorf("kubelet = %+v\nwant %+v", f.Kubelet, tc.want)
			}
			if got := f.Kubelet.Reserves("cpu") && f.Kubelet.Reserves("memory"); got != tc.reserves {
				t.Errorf("reserves = %v, want %v", got, tc.reserves)
			}
		})
	}
}

func TestKubeletConfigProblemsAreRecorded(t *testing.T) {
	cases := []struct {
		name string
		file string
		data string
		want string
	}{
		{"a missing explicit file is recorded with its path", "/etc/kubelet.yaml", "", "read /etc/kubelet.yaml: file does not exist"},
		{"a file of another kind is rejected", "/etc/kubelet.yaml", "kind: Pod\n", `/etc/kubelet.yaml: parse kubelet config: kind "(3 bytes not shown)"`},
		{"a file that is not YAML is recorded", "/etc/kubelet.yaml", "kind: [\n", "/etc/kubelet.yaml: parse kubelet config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			if tc.data != "" {
				fsys[strings.TrimPrefix(tc.file, "/")] = &fstest.MapFile{Data: []byte(tc.data)}
			}
			r := &Reader{Root: fsys}
			f, err := r.Read(context.Background(), Options{KubeletConfig: tc.file}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if e := f.Err(FactKubelet); e == nil || !strings.Contains(e.Message, tc.want) {
				t.Errorf("kubelet error = %+v, want %q", e, tc.want)
			}
		})
	}
}

func TestAnEmptyHostRecordsEveryFactAsMissing(t *testing.T) {
	r := &Reader{Root: fstest.MapFS{}}
	f, err := r.Read(context.Background(), Options{CacheDirs: []string{"/data"}}, h100GPUs[:1])
	if err != nil {
		t.Fatal(err)
	}
	want := []Fact{
		FactOSRelease, FactKernelRelease, FactKernelVersion, FactKernelTainted, FactCmdline,
		FactIOMMUUnits, FactCgroup, FactSysVendor, FactProductName, FactBIOSVersion,
		FactCPUOnline, FactCPUInfo, FactSMT, FactNUMA, FactMemory, FactMounts, FactSHM,
		FactContainerdConfig, FactKubelet,
	}
	for _, k := range want {
		if f.Err(k) == nil {
			t.Errorf("%s: no error recorded", k)
		}
	}
	if f.SecureBoot.State != SecureBootNotEFI || f.TimeSync.State != TimeUnknown || f.Containerd.Installed {
		t.Errorf("secure boot %q, time %q, containerd %v; want not-efi, unknown, not installed",
			f.SecureBoot.State, f.TimeSync.State, f.Containerd.Installed)
	}
	if len(f.GPUs) != 1 || f.GPUs[0].Err(FactGPUAddress) == nil || !f.GPUs[0].Err(FactGPUAddress).Missing {
		t.Errorf("gpus = %+v, want one GPU recorded as not on the bus", f.GPUs)
	}
	for _, d := range f.Disks {
		if d.Error == nil || !d.Error.Missing {
			t.Errorf("disk %s: error %+v, want missing", d.Path, d.Error)
		}
	}
	if f.Kubelet.ConfigPath != "" {
		t.Errorf("kubelet = %+v, want nothing read", f.Kubelet)
	}
}

func TestReadFailsOnlyWithoutRootOrContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name string
		r    *Reader
		ctx  context.Context
		want string
	}{
		{"a reader without a root fails", &Reader{}, context.Background(), "no root filesystem"},
		{"a cancelled context fails", &Reader{Root: fstest.MapFS{}}, ctx, "context canceled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.r.Read(tc.ctx, Options{}, nil)
			if err == nil || f != nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read = %v, %v; want error %q", f, err, tc.want)
			}
		})
	}
}

func TestContainerdCDIEnabled(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		name           string
		c              Containerd
		enabled, known bool
	}{
		{"the config's enable_cdi wins", Containerd{Version: "2.0.4", Config: &containerd.Config{EnableCDI: &no}}, false, true},
		{"containerd 2 enables CDI by default", Containerd{Version: "2.1.0", Config: &containerd.Config{}}, true, true},
		{"containerd 1.7 does not by default", Containerd{Version: "1.7.27"}, false, true},
		{"1.7 with enable_cdi = true does", Containerd{Version: "1.7.27", Config: &containerd.Config{EnableCDI: &yes}}, true, true},
		{"without config or version nothing is known", Containerd{}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if e, k := tc.c.CDIEnabled(); e != tc.enabled || k != tc.known {
				t.Errorf("CDIEnabled = %v %v, want %v %v", e, k, tc.enabled, tc.known)
			}
		})
	}
}
