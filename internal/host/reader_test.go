package host

import (
	"context"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
)

func TestOSRelease(t *testing.T) {
	cases := []struct {
		name string
		tree string
		want OSRelease
	}{
		{"the H100 node runs Ubuntu 22.04", treeH100,
			OSRelease{ID: "ubuntu", VersionID: "22.04", PrettyName: "Ubuntu 22.04.4 LTS", Codename: "jammy"}},
		{"the VM runs Debian 12", treeVM,
			OSRelease{ID: "debian", VersionID: "12", PrettyName: "Debian GNU/Linux 12 (bookworm)", Codename: "bookworm"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := readTree(t, tc.tree).OS; got != tc.want {
				t.Errorf("os = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestKernel(t *testing.T) {
	cases := []struct {
		name        string
		tree        string
		release     string
		versionPart string
		tainted     uint64
	}{
		{"the H100 node runs 5.15 tainted by the proprietary driver", treeH100, "5.15.0-113-generic", "#123-Ubuntu SMP", 4097},
		{"the VM runs 6.1 untainted", treeVM, "6.1.0-18-cloud-amd64", "Debian 6.1.76-1", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := readTree(t, tc.tree).Kernel
			if k.Release != tc.release || !strings.Contains(k.Version, tc.versionPart) || k.Tainted != tc.tainted {
				t.Errorf("kernel = %+v, want release %q, version with %q, tainted %d", k, tc.release, tc.versionPart, tc.tainted)
			}
		})
	}
}

func TestBootParameters(t *testing.T) {
	cases := []struct {
		name      string
		tree      string
		console   string
		iommu     IOMMU
		iommuErr  bool
		paramsLen int
	}{
		{"the H100 node boots with intel_iommu=on iommu=pt and runs passthrough", treeH100, "ttyS0,115200n8",
			IOMMU{Mode: IOMMUPassthrough, CmdlineMode: IOMMUPassthrough, Params: []string{"intel_iommu=on", "iommu=pt"},
				Units: 4, Groups: 3, DomainType: "identity"}, false, 8},
		{"the VM has no IOMMU parameter and no IOMMU class", treeVM, "ttyS0,115200",
			IOMMU{}, true, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := readTree(t, tc.tree)
			if v, ok := f.Boot.Get("console"); !ok || v != tc.console {
				t.Errorf("console = %q %v, want the last one, %q", v, ok, tc.console)
			}
			if len(f.Boot.Params) != tc.paramsLen {
				t.Errorf("params = %d, want %d: %+v", len(f.Boot.Params), tc.paramsLen, f.Boot.Params)
			}
			if !reflect.DeepEqual(f.Boot.IOMMU, tc.iommu) {
				t.Errorf("iommu = %+v, want %+v", f.Boot.IOMMU, tc.iommu)
			}
			if e := f.Err(FactIOMMUUnits); (e != nil) != tc.iommuErr || (e != nil && !strings.Contains(e.Message, "/sys/class/iommu")) {
				t.Errorf("iommu units error = %v, want error %v naming /sys/class/iommu", e, tc.iommuErr)
			}
		})
	}
}

func TestCgroup(t *testing.T) {
	cases := []struct {
		name string
		tree string
		want Cgroup
	}{
		{"the H100 node runs the unified v2 hierarchy", treeH100, Cgroup{Version: 2, Mode: "unified",
			Controllers: []string{"cpuset", "cpu", "io", "memory", "hugetlb", "pids", "rdma", "misc"}}},
		{"the VM runs the legacy v1 hierarchy", treeVM, Cgroup{Version: 1, Mode: "legacy"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := readTree(t, tc.tree).Cgroup; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("cgroup = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSecureBootAndPlatform(t *testing.T) {
	cases := []struct {
		name       string
		tree       string
		secureBoot string
		platform   Platform
		dmiMissing bool
	}{
		{"the H100 node enforces Secure Boot and names itself a DGX H100", treeH100, SecureBootEnabled,
			Platform{SysVendor: "NVIDIA", ProductName: "DGXH100", ProductSerial: "1660123456789", BIOSVersion: "1.1.3", BIOSDate: "09/13/2023"}, false},
		{"the VM booted without EFI and has no DMI", treeVM, SecureBootNotEFI, Platform{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := readTree(t, tc.tree)
			if f.SecureBoot.State != tc.secureBoot || f.Err(FactSecureBoot) != nil {
				t.Errorf("secure boot = %q (%v), want %q", f.SecureBoot.State, f.Err(FactSecureBoot), tc.secureBoot)
			}
			if f.Platform != tc.platform {
				t.Errorf("platform = %+v, want %+v", f.Platform, tc.platform)
			}
			for _, k := range []Fact{FactSysVendor, FactProductName, FactProductSerial, FactBIOSVersion, FactBIOSDate} {
				e := f.Err(k)
				if (e != nil) != tc.dmiMissing || (e != nil && (!e.Missing || !strings.Contains(e.Message, "/sys/class/dmi/id/"))) {
					t.Errorf("%s error = %+v, want missing %v with the path", k, e, tc.dmiMissing)
				}
			}
		})
	}
}

func TestCPUAndNUMA(t *testing.T) {
	cases := []struct {
		name string
		tree string
		cpu  CPU
		numa []NUMANode
	}{
		{"the H100 node has 224 threads on 2 sockets and 2 NUMA nodes", treeH100,
			CPU{Online: 224, OnlineList: "0-223", Model: "Intel(R) Xeon(R) Platinum 8480C", Sockets: 2, SMT: SMT{Active: true, Control: "on"}},
			[]NUMANode{{ID: 0, CPUList: "0-55,112-167", CPUs: 112, MemTotalKiB: 1056761600}, {ID: 1, CPUList: "56-111,168-223", CPUs: 112, MemTotalKiB: 1056761600}}},
		{"the VM has 8 vCPUs without SMT on one NUMA node", treeVM,
			CPU{Online: 8, OnlineList: "0-7", Model: "AMD EPYC 9654 96-Core Processor", Sockets: 1, SMT: SMT{Active: false, Control: "notsupported"}},
			[]NUMANode{{ID: 0, CPUList: "0-7", CPUs: 8}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := readTree(t, tc.tree)
			if f.CPU != tc.cpu {
				t.Errorf("cpu = %+v, want %+v", f.CPU, tc.cpu)
			}
			if !reflect.DeepEqual(f.NUMANodes, tc.numa) {
				t.Errorf("numa = %+v, want %+v", f.NUMANodes, tc.numa)
			}
		})
	}
}

func TestGPUPlacementAndLink(t *testing.T) {
	gen5x16 := PCIeLink{Speed: "32.0 GT/s PCIe", MaxSpeed: "32.0 GT/s PCIe", Gen: 5, MaxGen: 5, Width: 16, MaxWidth: 16}
	cases := []struct {
		name     string
		tree     string
		index    int
		address  string
		numa     int
		cpus     int
		link     PCIeLink
		degraded bool
	}{
		{"the first H100 sits on NUMA node 0 at gen5 x16", treeH100, 0, "0000:18:00.0", 0, 112, gen5x16, false},
		{"the fifth H100 (bus 9A, upper case in NVML) sits on NUMA node 1", treeH100, 4, "0000:9a:00.0", 1, 112, gen5x16, false},
		{"the last H100 sits on NUMA node 1", treeH100, 7, "0000:db:00.0", 1, 112, gen5x16, false},
		{"the VM's GPU has no NUMA node and runs gen4 x8 below gen5 x16", treeVM, 0, "0000:00:06.0", -1, 8,
			PCIeLink{Speed: "16.0 GT/s PCIe", MaxSpeed: "32.0 GT/s PCIe", Gen: 4, MaxGen: 5, Width: 8, MaxWidth: 16}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := readTree(t, tc.tree).GPUs[tc.index]
			if len(g.Errors) > 0 {
				t.Fatalf("errors: %+v", g.Errors)
			}
			if g.Address != tc.address || g.NUMANode != tc.numa || g.LocalCPUs != tc.cpus {
				t.Errorf("gpu = %+v, want address %s, numa %d, %d local CPUs", g, tc.address, tc.numa, tc.cpus)
			}
			if g.Link != tc.link || g.Link.Degraded() != tc.degraded {
				t.Errorf("link = %+v degraded %v, want %+v degraded %v", g.Link, g.Link.Degraded(), tc.link, tc.degraded)
			}
		})
	}
}

func TestMemoryAndSHM(t *testing.T) {
	cases := []struct {
		name   string
		tree   string
		memory Memory
		shm    SHM
	}{
		{"the H100 node has 1024 huge pages and a 64 GiB /dev/shm by mount option", treeH100,
			Memory{TotalKiB: 2113523200, AvailableKiB: 2050000000, HugePages: HugePages{Total: 1024, Free: 1000, SizeKiB: 2048}},
			SHM{Mounted: true, FSType: "tmpfs", SizeBytes: 64 << 30, Source: SHMFromMountOption}},
		{"the VM has no huge pages and a /dev/shm sized by statfs", treeVM,
			Memory{TotalKiB: 65842380, AvailableKiB: 62000000, HugePages: HugePages{SizeKiB: 2048}},
			SHM{Mounted: true, FSType: "tmpfs", SizeBytes: 32 << 30, Source: SHMFromStatfs}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := readTree(t, tc.tree)
			if f.Memory != tc.memory || f.SHM != tc.shm {
				t.Errorf("memory = %+v, shm = %+v; want %+v, %+v", f.Memory, f.SHM, tc.memory, tc.shm)
			}
		})
	}
}

func TestDisks(t *testing.T) {
	cases := []struct {
		name string
		tree string
		want []string // role path mount free% inode% error
	}{
		{"the H100 node reports containerd, kubelet and the cache on their mounts", treeH100, []string{
			"containerd /var/lib/containerd / 50 5 -",
			"kubelet /var/lib/kubelet / 25 90 -",
			"cache /raid/models /raid 10 - -",
		}},
		{"the VM has neither a containerd nor a kubelet folder", treeVM, []string{
			"containerd /var/lib/containerd / - - missing",
			"kubelet /var/lib/kubelet / - - missing",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range readTree(t, tc.tree).Disks {
				got = append(got, diskLine(d))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("disks:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func diskLine(d Disk) string {
	pct := func(v float64, ok bool) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf("%g", v)
	}
	e := "-"
	if d.Error != nil {
		e = "error"
		if d.Error.Missing {
			e = "missing"
		}
	}
	return strings.Join([]string{d.Role, d.Path, d.MountPoint, pct(d.FreePercent()), pct(d.FreeInodesPercent()), e}, " ")
}

func TestTimeSync(t *testing.T) {
	cases := []struct {
		name string
		tree string
		want TimeSync
	}{
		{"the H100 node's kernel says the clock is synchronized by timesyncd", treeH100,
			TimeSync{State: TimeSynchronized, Sources: []string{"systemd-timesyncd"}, Evidence: "adjtimex"}},
		{"the VM runs chrony but nothing says whether it is synchronized", treeVM,
			TimeSync{State: TimeUnknown, Sources: []string{"chrony"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := readTree(t, tc.tree).TimeSync; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("time sync = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestErrorsAreRecordedOnlyForWhatIsMissing(t *testing.T) {
	cases := []struct {
		name string
		tree string
		want []Fact
	}{
		{"the H100 node has every fact", treeH100, nil},
		{"the VM lacks IOMMU units, DMI, a containerd config and a kubelet config", treeVM, []Fact{
			FactIOMMUUnits, FactContainerdConfig, FactKubelet, FactBIOSDate, FactBIOSVersion,
			FactProductName, FactProductSerial, FactSysVendor,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := readTree(t, tc.tree)
			var got []Fact
			for k, e := range f.Errors {
				got = append(got, k)
				if !e.Missing || !strings.Contains(e.Message, "/") {
					t.Errorf("%s: %+v, want a missing-file error naming its path", k, e)
				}
			}
			sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors for %v, want %v: %+v", got, tc.want, f.Errors)
			}
			if !f.Time.Equal(testTime) {
				t.Errorf("time = %v, want the injected clock", f.Time)
			}
		})
	}
}

func TestIOMMUModeFollowsSysfs(t *testing.T) {
	dir := &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	cases := []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"no IOMMU unit means disabled whatever the command line asks", fstest.MapFS{
			"proc/cmdline": file("intel_iommu=on"), "sys/class/iommu": dir}, IOMMUDisabled},
		{"a DMA-FQ default domain means translation even with iommu=pt", fstest.MapFS{
			"proc/cmdline": file("iommu=pt"), "sys/class/iommu/dmar0": dir,
			"sys/kernel/iommu_groups/0/type": file("DMA-FQ\n")}, IOMMUEnabled},
		{"without groups the command line's passthrough is believed", fstest.MapFS{
			"proc/cmdline": file("amd_iommu=on iommu=pt"), "sys/class/iommu/ivhd0": dir}, IOMMUPassthrough},
		{"units without groups or parameters mean translation", fstest.MapFS{
			"proc/cmdline": file("ro"), "sys/class/iommu/dmar0": dir}, IOMMUEnabled},
		{"the lowest group decides", fstest.MapFS{
			"proc/cmdline": file("ro"), "sys/class/iommu/dmar0": dir,
			"sys/kernel/iommu_groups/10/type": file("DMA\n"), "sys/kernel/iommu_groups/2/type": file("identity\n")}, IOMMUPassthrough},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := (&Reader{Root: tc.fsys}).Read(context.Background(), Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if f.Boot.IOMMU.Mode != tc.want || f.Err(FactIOMMUUnits) != nil {
				t.Errorf("iommu = %+v (%v), want mode %q", f.Boot.IOMMU, f.Err(FactIOMMUUnits), tc.want)
			}
		})
	}
}
