package cdispec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/gpunode/gpunode/internal/gpu"
)

const migMinors = "config 1\nmonitor 2\ngpu3/gi1/access 30\ngpu3/gi1/ci0/access 31\ngpu3/gi2/access 39\ngpu3/gi2/ci0/access 40\n"

// migHost is fullHost with GPU 1 (minor 3) in MIG mode and the capability nodes listed.
func migHost(t *testing.T, minors string, nodes ...string) string {
	t.Helper()
	root := fullHost(t)
	if err := os.MkdirAll(filepath.Join(root, "proc/driver/nvidia-caps"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, migMinorsFile), []byte(minors), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "dev/nvidia-caps"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := os.WriteFile(filepath.Join(root, "dev/nvidia-caps", n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func migGPUs() []gpu.Device {
	devs := twoGPUs()
	devs[1].MIG = gpu.MIG{Capable: true, Enabled: true}
	devs[1].MIGDevices = []gpu.MIGDevice{
		{Index: 0, UUID: "MIG-11111111-0000-0000-0000-000000000000", GPUInstance: 1, ComputeInstance: 0, Profile: "3g.40gb"},
		{Index: 1, UUID: "MIG-22222222-0000-0000-0000-000000000000", GPUInstance: 2, ComputeInstance: 0, Profile: "3g.40gb"},
	}
	return devs
}

func TestAMIGDeviceGetsItsParentsNodeAndItsCapabilityNodes(t *testing.T) {
	root := migHost(t, migMinors, "nvidia-cap30", "nvidia-cap31", "nvidia-cap39", "nvidia-cap40")
	h, err := Discover(os.DirFS(root), driver, migGPUs())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	s, err := Build(migGPUs(), h)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	path, err := Write(t.TempDir(), s)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(filepath.Dir(path)), cdiapi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"MIG-22222222-0000-0000-0000-000000000000", "1:1"} {
		d := cache.GetDevice(Kind + "=" + name)
		if d == nil {
			t.Fatalf("the CDI library does not resolve %s=%s (errors %v)", Kind, name, cache.GetErrors())
		}
		var nodes []string
		for _, n := range d.ContainerEdits.DeviceNodes {
			nodes = append(nodes, n.Path)
		}
		if want := []string{"/dev/nvidia3", "/dev/nvidia-caps/nvidia-cap39", "/dev/nvidia-caps/nvidia-cap40"}; !slices.Equal(nodes, want) {
			t.Errorf("device %s has nodes %v, want %v", name, nodes, want)
		}
	}
}

func TestMIGCapabilitiesThatCannotBeFoundAreNamed(t *testing.T) {
	cases := []struct {
		name   string
		minors string
		nodes  []string
		want   string
	}{
		{"a compute instance missing from mig-minors", "gpu3/gi1/access 30\ngpu3/gi1/ci0/access 31\ngpu3/gi2/access 39\n", []string{"nvidia-cap30", "nvidia-cap31", "nvidia-cap39"}, "no gpu3/gi2/ci0/access"},
		{"a capability node missing from /dev", migMinors, []string{"nvidia-cap30", "nvidia-cap31", "nvidia-cap39"}, "/dev/nvidia-caps/nvidia-cap40"},
		{"a malformed mig-minors line", "gpu3/gi1/access\n", nil, "mig-minors:1:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Discover(os.DirFS(migHost(t, c.minors, c.nodes...)), driver, migGPUs())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Discover error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func FuzzParseMIGMinors(f *testing.F) {
	f.Add([]byte(migMinors))
	f.Add([]byte("gpu0/gi1/access -1\n"))
	f.Add([]byte("a b c\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseMIGMinors(data)
		if err != nil {
			if !strings.Contains(err.Error(), migMinorsFile) {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		for k, v := range m {
			if v < 0 || k == "" || strings.ContainsAny(k, " \t") {
				t.Fatalf("accepted %q -> %d", k, v)
			}
		}
	})
}
