package containerd

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

const v2NvidiaDefault = `
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "nvidia"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
        BinaryName = "/usr/bin/nvidia-container-runtime"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
`

// v3Toolkit is what nvidia-ctk writes for containerd 2.x: the runtime is not the default.
const v3Toolkit = `
version = 3
root = "/data/containerd"
[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = "runc"
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia.options]
      BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia-cdi]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia-cdi.options]
      BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime.cdi"
`

func TestParse(t *testing.T) {
	yes := true
	cases := []struct {
		name string
		in   string
		want *Config
		err  string
	}{
		{"version 2 with nvidia as the default runtime", v2NvidiaDefault, &Config{
			Version: 2, DefaultRuntime: "nvidia", EnableCDI: &yes, CDISpecDirs: []string{"/etc/cdi", "/var/run/cdi"},
			Runtimes: []Runtime{
				{Name: "nvidia", Type: "io.containerd.runc.v2", BinaryName: "/usr/bin/nvidia-container-runtime", Nvidia: true},
				{Name: "runc", Type: "io.containerd.runc.v2"},
			},
			NvidiaRuntime: true, NvidiaDefault: true,
		}, ""},
		{"version 3 with the toolkit's runtimes beside runc", v3Toolkit, &Config{
			Version: 3, Root: "/data/containerd", DefaultRuntime: "runc",
			Runtimes: []Runtime{
				{Name: "nvidia", Type: "io.containerd.runc.v2", BinaryName: "/usr/local/nvidia/toolkit/nvidia-container-runtime", Nvidia: true},
				{Name: "nvidia-cdi", Type: "io.containerd.runc.v2", BinaryName: "/usr/local/nvidia/toolkit/nvidia-container-runtime.cdi", Nvidia: true},
			},
			NvidiaRuntime: true,
		}, ""},
		{"version 2 runtimes under the version 3 table are not read", strings.Replace(v3Toolkit, "version = 3", "version = 2", 1),
			&Config{Version: 2, Root: "/data/containerd"}, ""},
		{"version 1 (no version key) reads plugins.cri", `
[plugins.cri.containerd]
  default_runtime_name = "gpu"
  [plugins.cri.containerd.runtimes.gpu]
    runtime_type = "io.containerd.runc.v2"
    [plugins.cri.containerd.runtimes.gpu.options]
      BinaryName = "nvidia-container-runtime"
`, &Config{Version: 1, DefaultRuntime: "gpu", Runtimes: []Runtime{
			{Name: "gpu", Type: "io.containerd.runc.v2", BinaryName: "nvidia-container-runtime", Nvidia: true},
		}, NvidiaRuntime: true, NvidiaDefault: true}, ""},
		{"an empty file is version 1 with nothing set", "", &Config{Version: 1}, ""},
		{"a runtime table of the wrong type is ignored", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\nruntimes = 5\n",
			&Config{Version: 2}, ""},
		{"an unknown version is an error", "version = 9\n", nil, "version 9"},
		{"a version that is not a number is an error", "version = \"2\"\n", nil, "version 2"},
		{"broken TOML is an error", "[plugins\n", nil, "parse containerd config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.imports = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse =\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
}

func TestLoadMergesImports(t *testing.T) {
	cases := []struct {
		name     string
		fsys     fstest.MapFS
		files    []string
		defRT    string
		runtimes []string
		nvidia   bool
		err      string
	}{
		{"a drop-in from conf.d adds the nvidia runtime to a version 3 config", fstest.MapFS{
			"etc/containerd/config.toml": {Data: []byte("version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n" +
				"[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\nruntime_type = \"io.containerd.runc.v2\"\n")},
			"etc/containerd/conf.d/99-nvidia.toml": {Data: []byte(v3Toolkit)},
			"etc/containerd/conf.d/README":         {Data: []byte("not imported")},
		}, []string{"/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml"}, "runc",
			[]string{"nvidia", "nvidia-cdi", "runc"}, true, ""},
		{"a relative import is taken from the importing file's folder, later files win", fstest.MapFS{
			"etc/containerd/config.toml": {Data: []byte("version = 2\nimports = [\"a.toml\", \"b.toml\"]\n")},
			"etc/containerd/a.toml":      {Data: []byte(v2NvidiaDefault)},
			"etc/containerd/b.toml": {Data: []byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n" +
				"default_runtime_name = \"runc\"\n")},
		}, []string{"/etc/containerd/config.toml", "/etc/containerd/a.toml", "/etc/containerd/b.toml"}, "runc",
			[]string{"nvidia", "runc"}, true, ""},
		{"circular imports load each file once", fstest.MapFS{
			"etc/containerd/config.toml": {Data: []byte("imports = [\"/etc/containerd/x.toml\"]\n")},
			"etc/containerd/x.toml":      {Data: []byte("imports = [\"/etc/containerd/config.toml\"]\n")},
		}, []string{"/etc/containerd/config.toml", "/etc/containerd/x.toml"}, "", nil, false, ""},
		{"a missing import stops the load and names the file, as containerd refuses to start", fstest.MapFS{
			"etc/containerd/config.toml": {Data: []byte("imports = [\"/etc/containerd/extra.toml\"]\n" + v2NvidiaDefault)},
		}, []string{"/etc/containerd/config.toml"}, "nvidia", []string{"nvidia", "runc"}, true,
			"read /etc/containerd/extra.toml: file does not exist"},
		{"a glob that matches nothing imports nothing", fstest.MapFS{
			"etc/containerd/config.toml": {Data: []byte("imports = [\"/etc/containerd/conf.d/*.toml\"]\n" + v2NvidiaDefault)},
		}, []string{"/etc/containerd/config.toml"}, "nvidia", []string{"nvidia", "runc"}, true, ""},
		{"a broken import is an error naming it, with the config so far", fstest.MapFS{
			"etc/containerd/config.toml": {Data: []byte("version = 2\nimports = [\"/etc/containerd/bad.toml\"]\n")},
			"etc/containerd/bad.toml":    {Data: []byte("[[[")},
		}, []string{"/etc/containerd/config.toml"}, "", nil, false, "/etc/containerd/bad.toml: parse containerd config"},
		{"an absent config is an error naming the path", fstest.MapFS{}, nil, "", nil, false,
			"read /etc/containerd/config.toml: file does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(tc.fsys, "/etc/containerd/config.toml")
			if (err != nil) != (tc.err != "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error = %v, want %q", err, tc.err)
			}
			if c == nil {
				if tc.files != nil {
					t.Fatalf("no config, want files %v", tc.files)
				}
				return
			}
			var names []string
			for _, r := range c.Runtimes {
				names = append(names, r.Name)
			}
			if !reflect.DeepEqual(c.Files, tc.files) || c.DefaultRuntime != tc.defRT ||
				!reflect.DeepEqual(names, tc.runtimes) || c.NvidiaRuntime != tc.nvidia {
				t.Errorf("config = %+v\nwant files %v default %q runtimes %v nvidia %v", c, tc.files, tc.defRT, tc.runtimes, tc.nvidia)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want string
	}{
		{"the containerd.io package", "containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da\n", "1.7.27"},
		{"containerd 2 from source", "containerd github.com/containerd/containerd/v2 v2.0.4 1a43cb6a1035441f9aca8f5666a9b3ef9e70ab20\n", "2.0.4"},
		{"a distribution build", "containerd github.com/containerd/containerd 1.6.12-0ubuntu1~22.04.3 \n", "1.6.12-0ubuntu1~22.04.3"},
		{"something else", "bash: containerd: command not found\n", ""},
		{"nothing", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseVersion(tc.in)
			if got != tc.want || (err != nil) != (tc.want == "") {
				t.Errorf("ParseVersion(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{v2NvidiaDefault, v3Toolkit, "", "version = 1\n[plugins.cri]\ncontainerd = 1\n",
		"imports = [1, \"x\"]\n", "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes]\nnvidia = \"x\"\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err == nil && (c.Version < 1 || c.Version > 3) {
			t.Fatalf("version %d accepted", c.Version)
		}
	})
}
