package cdispec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpunode/gpunode/internal/gpu"
)

const driver = "580.95.05"

// hostTree makes a host root with what is named in files (empty files);
// each entry is a path relative to the root, "->target" for a symbolic link.
func hostTree(t *testing.T, files ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range files {
		p, target, link := strings.Cut(f, "->")
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if link {
			err = os.Symlink(target, full)
		} else {
			err = os.WriteFile(full, nil, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fullHost is a host with everything the generator looks for.
func fullHost(t *testing.T, except ...string) string {
	t.Helper()
	lib := "usr/lib/x86_64-linux-gnu/"
	all := []string{
		"proc/driver/nvidia/gpus/0000:18:00.0/information", "dev/nvidia0",
		"proc/driver/nvidia/gpus/0000:2a:00.0/information", "dev/nvidia3",
		"dev/nvidiactl", "dev/nvidia-uvm", "dev/nvidia-uvm-tools",
		lib + "libcuda.so." + driver, lib + "libcuda.so.1->libcuda.so." + driver, lib + "libcuda.so->libcuda.so.1",
		lib + "libnvidia-ml.so." + driver, lib + "libnvidia-ml.so.1->libnvidia-ml.so." + driver,
		lib + "libnvidia-ptxjitcompiler.so." + driver,
		"usr/bin/nvidia-smi", "usr/bin/nvidia-cdi-hook",
	}
	var keep []string
	for _, f := range all {
		if !slices.ContainsFunc(except, func(e string) bool { return strings.HasPrefix(f, e) }) {
			keep = append(keep, f)
		}
	}
	root := hostTree(t, keep...)
	// The information files name their minors.
	for bus, minor := range map[string]string{"0000:18:00.0": "0", "0000:2a:00.0": "3"} {
		p := filepath.Join(root, "proc/driver/nvidia/gpus", bus, "information")
		if _, err := os.Stat(p); err == nil {
			if err := os.WriteFile(p, []byte("Model: NVIDIA H100\nDevice Minor: \t "+minor+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

func twoGPUs() []gpu.Device {
	return []gpu.Device{
		{Index: 0, UUID: "GPU-aaaaaaaa-0000-0000-0000-000000000000", PCI: gpu.PCI{BusID: "00000000:18:00.0"}},
		{Index: 1, UUID: "GPU-bbbbbbbb-0000-0000-0000-000000000000", PCI: gpu.PCI{BusID: "00000000:2A:00.0"}},
	}
}

func TestTheSpecNamesEachGPUByUUIDAndIndexWithItsOwnDeviceNode(t *testing.T) {
	root := fullHost(t)
	h, err := Discover(os.DirFS(root), driver, twoGPUs())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	s, err := Build(twoGPUs(), h)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	nodes := map[string]string{}
	for _, d := range s.Devices {
		nodes[d.Name] = d.ContainerEdits.DeviceNodes[0].Path
	}
	want := map[string]string{
		"GPU-aaaaaaaa-0000-0000-0000-000000000000": "/dev/nvidia0", "0": "/dev/nvidia0",
		"GPU-bbbbbbbb-0000-0000-0000-000000000000": "/dev/nvidia3", "1": "/dev/nvidia3", "all": "/dev/nvidia0",
	}
	for name, node := range want {
		if nodes[name] != node {
			t.Errorf("device %q has node %q, want %q", name, nodes[name], node)
		}
	}
	var mounts []string
	for _, m := range s.ContainerEdits.Mounts {
		mounts = append(mounts, m.HostPath)
	}
	lib := "/usr/lib/x86_64-linux-gnu/"
	wantMounts := []string{lib + "libcuda.so." + driver, lib + "libcuda.so.1", lib + "libnvidia-ml.so." + driver,
		lib + "libnvidia-ml.so.1", lib + "libnvidia-ptxjitcompiler.so." + driver, "/usr/bin/nvidia-smi"}
	if !slices.Equal(mounts, wantMounts) {
		t.Errorf("mounts %v, want %v (versioned files and SONAME links, not the dev link)", mounts, wantMounts)
	}
	var ctl []string
	for _, n := range s.ContainerEdits.DeviceNodes {
		ctl = append(ctl, n.Path)
	}
	if !slices.Equal(ctl, []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}) {
		t.Errorf("control nodes %v, want nvidiactl, uvm and uvm-tools (no modeset on this host)", ctl)
	}
	if len(s.ContainerEdits.Hooks) != 1 || !slices.Contains(s.ContainerEdits.Hooks[0].Args, "update-ldcache") {
		t.Errorf("hooks %+v, want the update-ldcache hook", s.ContainerEdits.Hooks)
	}

	dir := t.TempDir()
	path, err := Write(dir, s)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(dir), cdiapi.WithAutoRefresh(false))
	if err != nil {
		t.Fatalf("CDI cache over %s: %v", dir, err)
	}
	for _, name := range []string{"nvidia.com/gpu=GPU-aaaaaaaa-0000-0000-0000-000000000000", "nvidia.com/gpu=1", "nvidia.com/gpu=all"} {
		if cache.GetDevice(name) == nil {
			t.Errorf("the CDI library does not resolve %s from %s (errors %v)", name, path, cache.GetErrors())
		}
	}
}

func TestDiscoveryNamesWhatTheHostLacks(t *testing.T) {
	cases := []struct {
		name    string
		missing string
		want    string
	}{
		{"a GPU without its driver information has no known minor", "proc/driver/nvidia/gpus/0000:2a", "proc/driver/nvidia/gpus/0000:2a:00.0/information"},
		{"a GPU whose device node is missing is refused", "dev/nvidia3", "device node /dev/nvidia3"},
		{"a host without nvidiactl is refused", "dev/nvidiactl", "/dev/nvidiactl"},
		{"a host without libcuda of the driver's version is refused", "usr/lib/x86_64-linux-gnu/libcuda.so.", "libcuda.so." + driver + " not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Discover(os.DirFS(fullHost(t, c.missing)), driver, twoGPUs())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Discover error %v, want one naming %q", err, c.want)
			}
		})
	}
	if _, err := Discover(os.DirFS(fullHost(t)), "", twoGPUs()); err == nil {
		t.Error("Discover with no driver version succeeded")
	}
}

func TestWriteReplacesGpunodesOwnSpecsAndLeavesOthers(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"gpunode-nvidia.com-gpu.yaml", "gpunode-old.json", "nvidia.yaml", "gpunode-notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := &specs.Spec{Version: "0.5.0", Kind: Kind, Devices: []specs.Device{{Name: "0",
		ContainerEdits: specs.ContainerEdits{DeviceNodes: []*specs.DeviceNode{{Path: "/dev/nvidia0"}}}}}}
	if _, err := Write(dir, s); err != nil {
		t.Fatalf("Write: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := []string{"gpunode-notes.txt", "gpunode-nvidia.com-gpu.json", "nvidia.yaml"}
	if !slices.Equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
}

func TestTheKeeperWritesOnlyWhenTheGPUsChange(t *testing.T) {
	dir := t.TempDir()
	k := &Keeper{Root: os.DirFS(fullHost(t)), Dir: dir}
	snap := &gpu.Snapshot{Driver: gpu.Driver{Version: driver}, Devices: twoGPUs()}
	steps := []struct {
		name  string
		devs  []gpu.Device
		wrote bool
	}{
		{"the first sync writes the spec", twoGPUs(), true},
		{"the same GPUs are not written again", twoGPUs(), false},
		{"a GPU gone rewrites the spec", twoGPUs()[:1], true},
		{"a GPU without a readable UUID is left out, not written for", append(twoGPUs()[:1], gpu.Device{Index: 1, Errors: map[gpu.Field]gpu.FieldError{gpu.FieldUUID: {Lost: true}}}), false},
	}
	for _, st := range steps {
		snap.Devices = st.devs
		wrote, err := k.Sync(snap)
		if err != nil || wrote != st.wrote {
			t.Errorf("%s: Sync wrote %v, err %v; want wrote %v", st.name, wrote, err, st.wrote)
		}
	}
	s, err := cdiapi.ReadSpec(filepath.Join(dir, "gpunode-nvidia.com-gpu.json"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.GetDevice("1") != nil || s.GetDevice("0") == nil {
		t.Error("the spec on disk still has GPU 1 after it was gone")
	}
}
