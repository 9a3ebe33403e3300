package host

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseCmdline(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []Param
	}{
		{"an empty line has no parameters", "  \n", nil},
		{"flags and values are told apart", "ro quiet root=/dev/sda1",
			[]Param{{Key: "ro"}, {Key: "quiet"}, {Key: "root", Value: "/dev/sda1", HasValue: true}}},
		{"a quoted value keeps its spaces and loses its quotes", `dyndbg="file drivers/gpu +p" ro`,
			[]Param{{Key: "dyndbg", Value: "file drivers/gpu +p", HasValue: true}, {Key: "ro"}}},
		{"a fully quoted parameter loses its quotes", `"acpi=off noapic"`,
			[]Param{{Key: "acpi", Value: "off noapic", HasValue: true}}},
		{"only the first equals sign splits", "pci=realloc=off",
			[]Param{{Key: "pci", Value: "realloc=off", HasValue: true}}},
		{"an empty value is still a value", "console=",
			[]Param{{Key: "console", HasValue: true}}},
		{"arguments after -- belong to init", "ro -- single splash",
			[]Param{{Key: "ro"}}},
		{"tabs and newlines separate parameters", "ro\tiommu=pt\n",
			[]Param{{Key: "ro"}, {Key: "iommu", Value: "pt", HasValue: true}}},
		{"an unterminated quote runs to the end", `a="b c`,
			[]Param{{Key: "a", Value: "b c", HasValue: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseCmdline(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseCmdline(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestIOMMUFromTheCommandLine(t *testing.T) {
	cases := []struct {
		name    string
		cmdline string
		mode    string
		params  []string
	}{
		{"nothing said means nothing known", "ro quiet", "", nil},
		{"intel_iommu=on enables translation", "intel_iommu=on", IOMMUEnabled, []string{"intel_iommu=on"}},
		{"iommu=pt after intel_iommu=on asks for passthrough", "intel_iommu=on iommu=pt", IOMMUPassthrough, []string{"intel_iommu=on", "iommu=pt"}},
		{"iommu=pt before intel_iommu=on still asks for passthrough", "iommu=pt intel_iommu=on", IOMMUPassthrough, []string{"iommu=pt", "intel_iommu=on"}},
		{"amd_iommu=off disables", "amd_iommu=off", IOMMUDisabled, []string{"amd_iommu=off"}},
		{"arm's iommu.passthrough=1 asks for passthrough", "iommu.passthrough=1", IOMMUPassthrough, []string{"iommu.passthrough=1"}},
		{"iommu.passthrough=0 asks for translation", "iommu.passthrough=0", IOMMUEnabled, []string{"iommu.passthrough=0"}},
		{"intel_iommu options are a list", "intel_iommu=on,sm_on", IOMMUEnabled, []string{"intel_iommu=on,sm_on"}},
		{"iommu=off disables", "iommu=off", IOMMUDisabled, []string{"iommu=off"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			params, mode := iommuFromParams(ParseCmdline(tc.cmdline))
			if mode != tc.mode || !slices.Equal(params, tc.params) {
				t.Errorf("iommu(%q) = %q %q, want %q %q", tc.cmdline, mode, params, tc.mode, tc.params)
			}
		})
	}
}

func TestBootGetTreatsDashesAsUnderscores(t *testing.T) {
	b := Boot{Params: ParseCmdline("intel-iommu=off intel_iommu=on")}
	if v, ok := b.Get("intel_iommu"); !ok || v != "on" {
		t.Errorf("Get = %q %v, want the last, on", v, ok)
	}
	if _, ok := b.Get("missing"); ok {
		t.Error("Get found a parameter that is not there")
	}
}

func TestSysfsAddress(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want string
		err  bool
	}{
		{"NVML's 8-digit domain becomes 4 digits", "00000000:18:00.0", "0000:18:00.0", false},
		{"upper-case hex becomes lower case", "00000000:DB:00.0", "0000:db:00.0", false},
		{"the sysfs form is kept", "0000:9a:00.0", "0000:9a:00.0", false},
		{"a bus id without domain is domain 0", "06:00.0", "0000:06:00.0", false},
		{"a large domain is kept whole", "00010000:01:00.0", "10000:01:00.0", false},
		{"a function above 7 is rejected", "0000:18:00.8", "", true},
		{"a device above 1f is rejected", "0000:18:20.0", "", true},
		{"garbage is rejected", "not-a-bus-id", "", true},
		{"an empty id is rejected", "", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SysfsAddress(tc.in)
			if got != tc.want || (err != nil) != tc.err {
				t.Errorf("SysfsAddress(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestParseLinkSpeed(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want int
		err  bool
	}{
		{"2.5 GT/s is gen 1", "2.5 GT/s PCIe", 1, false},
		{"5 GT/s is gen 2", "5.0 GT/s PCIe", 2, false},
		{"8 GT/s without decimals is gen 3", "8 GT/s", 3, false},
		{"16 GT/s is gen 4", "16.0 GT/s PCIe", 4, false},
		{"32 GT/s is gen 5", "32.0 GT/s PCIe", 5, false},
		{"64 GT/s is gen 6", "64.0 GT/s PCIe", 6, false},
		{"an unknown speed (link down) is an error", "Unknown", 0, true},
		{"an odd rate is an error", "12.0 GT/s PCIe", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLinkSpeed(tc.in)
			if got != tc.want || (err != nil) != tc.err {
				t.Errorf("ParseLinkSpeed(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestParseCPUList(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want int
		err  bool
	}{
		{"an empty list is no CPUs", "\n", 0, false},
		{"a single CPU", "5", 1, false},
		{"ranges and singles add up", "0-55,112-167,200", 113, false},
		{"a reversed range is an error", "5-3", 0, true},
		{"a negative CPU is an error", "-1", 0, true},
		{"an absurd range is refused before allocating", "0-4294967295", 0, true},
		{"text is an error", "all", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCPUList(tc.in)
			if len(got) != tc.want || (err != nil) != tc.err {
				t.Errorf("ParseCPUList(%q) = %d CPUs, %v; want %d, error %v", tc.in, len(got), err, tc.want, tc.err)
			}
		})
	}
}

func TestParseTmpfsSize(t *testing.T) {
	const mem = 64 << 30
	cases := []struct {
		name string
		in   string
		want uint64
		err  bool
	}{
		{"the kernel's kibibytes", "67108864k", 64 << 30, false},
		{"gibibytes in upper case", "16G", 16 << 30, false},
		{"plain bytes", "4096", 4096, false},
		{"a percentage of memory", "50%", 32 << 30, false},
		{"an overflowing size is an error", "99999999999999e", 0, true},
		{"an empty size is an error", "", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTmpfsSize(tc.in, mem)
			if got != tc.want || (err != nil) != tc.err {
				t.Errorf("ParseTmpfsSize(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestSHMWithoutSizeOrStatfsIsHalfOfMemory(t *testing.T) {
	r := &Reader{}
	got, err := r.shm(ParseMounts("tmpfs /dev/shm tmpfs rw 0 0\n"), "/proc/1/mounts", 1024)
	want := SHM{Mounted: true, FSType: "tmpfs", SizeBytes: 512 * 1024, Source: SHMKernelDefault}
	if err != nil || got != want {
		t.Errorf("shm = %+v, %v; want %+v", got, err, want)
	}
}

func TestParseSecureBootVar(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want string
		err  bool
	}{
		{"1 after the attributes is enabled", []byte{6, 0, 0, 0, 1}, SecureBootEnabled, false},
		{"0 after the attributes is disabled", []byte{6, 0, 0, 0, 0}, SecureBootDisabled, false},
		{"a short variable is unknown", []byte{6, 0, 0}, SecureBootUnknown, true},
		{"another value is unknown", []byte{6, 0, 0, 0, 7}, SecureBootUnknown, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSecureBootVar(tc.in)
			if got != tc.want || (err != nil) != tc.err {
				t.Errorf("ParseSecureBootVar(%v) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestParseMountsUndoesOctalEscapes(t *testing.T) {
	m := ParseMounts(`/dev/sdb1 /mnt/model\040cache ext4 rw,size=1k 0 0` + "\nshort line\n")
	if len(m) != 1 || m[0].MountPoint != "/mnt/model cache" {
		t.Fatalf("mounts = %+v, want one at %q", m, "/mnt/model cache")
	}
	if v, ok := m[0].Option("size"); !ok || v != "1k" {
		t.Errorf("size option = %q %v, want 1k", v, ok)
	}
}

func TestMountOfPicksTheDeepestMount(t *testing.T) {
	mounts := ParseMounts("/dev/a / ext4 rw 0 0\n/dev/b /var/lib ext4 rw 0 0\n/dev/c /var/lib/containerd xfs rw 0 0\n/dev/d /var/lib/containerd-old xfs rw 0 0\n")
	cases := []struct {
		name string
		path string
		want string
	}{
		{"a folder on its own mount", "/var/lib/containerd", "/dev/c"},
		{"a folder below a mount", "/var/lib/containerd/io.containerd.content.v1.content", "/dev/c"},
		{"a name prefix is not containment", "/var/lib/containerdx", "/dev/b"},
		{"anything else is on /", "/raid", "/dev/a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if m, _ := mountOf(mounts, tc.path); m.Device != tc.want {
				t.Errorf("mountOf(%q) = %q, want %q", tc.path, m.Device, tc.want)
			}
		})
	}
}

func TestParseKubeletConfig(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want Kubelet
		err  string
	}{
		{"numbers and strings become quantities", "kind: KubeletConfiguration\nkubeReserved:\n  cpu: 500m\n  memory: 1Gi\nsystemReserved:\n  cpu: 0.5\n",
			Kubelet{KubeReserved: map[string]string{"cpu": "500m", "memory": "1Gi"}, SystemReserved: map[string]string{"cpu": "0.5"}}, ""},
		{"JSON works too (EKS)", `{"kind":"KubeletConfiguration","maxPods":58,"evictionHard":{"memory.available":"100Mi"}}`,
			Kubelet{MaxPods: 58, EvictionHard: map[string]string{"memory.available": "100Mi"}}, ""},
		{"another kind is refused", "kind: KubeProxyConfiguration\n", Kubelet{}, "want KubeletConfiguration"},
		{"a wrong type is an error", "kind: KubeletConfiguration\nmaxPods: many\n", Kubelet{}, "parse kubelet config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseKubeletConfig([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseKubeletConfig = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestKubeletReserves(t *testing.T) {
	cases := []struct {
		name string
		k    Kubelet
		res  string
		want bool
	}{
		{"nothing set reserves nothing", Kubelet{}, "cpu", false},
		{"kubeReserved memory counts", Kubelet{KubeReserved: map[string]string{"memory": "2Gi"}}, "memory", true},
		{"a zero quantity does not count", Kubelet{SystemReserved: map[string]string{"cpu": "0m"}}, "cpu", false},
		{"reservedSystemCPUs reserves CPU", Kubelet{ReservedSystemCPUs: "0-1"}, "cpu", true},
		{"reservedSystemCPUs does not reserve memory", Kubelet{ReservedSystemCPUs: "0-1"}, "memory", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.k.Reserves(tc.res); got != tc.want {
				t.Errorf("Reserves(%q) = %v, want %v", tc.res, got, tc.want)
			}
		})
	}
}

func TestParseOSReleaseUnquotes(t *testing.T) {
	got := ParseOSRelease("# comment\nID='rhel'\nVERSION_ID=\"9.4\"\nPRETTY_NAME=\"Red Hat \\\"Enterprise\\\" Linux\"\nnonsense\n")
	want := OSRelease{ID: "rhel", VersionID: "9.4", PrettyName: `Red Hat "Enterprise" Linux`}
	if got != want {
		t.Errorf("ParseOSRelease = %+v, want %+v", got, want)
	}
}
