package host

import (
	"context"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// A DaemonSet pod mounts the node's / at /host: /host/proc is the node's procfs, but
// /host/proc/mounts is a link to self/mounts, the reading container's own table (a 64 MiB
// /dev/shm, an overlay root). These trees hold both tables; the node's is its init's.
const (
	containerMounts = `overlay / overlay rw,relatime,lowerdir=/l,upperdir=/u,workdir=/w 0 0
shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0
cgroup /sys/fs/cgroup cgroup2 ro,nosuid,nodev,noexec,relatime 0 0
`
	nodeMountinfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,discard
23 22 0:5 / /dev rw,nosuid,relatime shared:2 - devtmpfs udev rw,size=24641512k,mode=755
24 23 0:24 / /dev/shm rw,nosuid,nodev shared:3 - tmpfs tmpfs rw,inode64
25 22 0:25 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
26 22 259:1 / /var/lib/containerd rw,noatime shared:5 - xfs /dev/nvme0n1 rw,attr2
`
	nodeMounts = `/dev/sda1 / ext4 rw,relatime,discard 0 0
tmpfs /dev/shm tmpfs rw,nosuid,nodev,size=25165824k,inode64 0 0
cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0
`
	meminfo48G = "MemTotal:       49283024 kB\nMemAvailable:   40000000 kB\n"
)

// podView is a host root as a DaemonSet pod sees it, with the node's mount table in the
// named files (path -> content).
func podView(node map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{
		"proc/mounts":  {Data: []byte(containerMounts)},
		"proc/meminfo": {Data: []byte(meminfo48G)},
	}
	for p, s := range node {
		fsys[p] = &fstest.MapFile{Data: []byte(s)}
	}
	return fsys
}

// nodeStatfs is statfs under the node's root: /dev/shm is the node's 24 GiB tmpfs.
func nodeStatfs(p string) (StatFS, error) {
	switch p {
	case "/dev/shm":
		return StatFS{TotalBytes: 24 << 30, FreeBytes: 24 << 30}, nil
	case "/var/lib/containerd", "/var/lib/kubelet":
		return StatFS{TotalBytes: 1 << 40, FreeBytes: 1 << 39}, nil
	}
	return StatFS{}, fmt.Errorf("statfs %s: %w", p, fs.ErrNotExist)
}

func TestHostFactsComeFromTheNodesInitProcessNotFromTheReadersOwnMountTable(t *testing.T) {
	cases := []struct {
		name   string
		node   map[string]string
		shm    SHM
		cgroup Cgroup
		// disk is the containerd disk's mount point and device; "" when not found.
		disk string
		// errs are the facts that must have an error naming inPath.
		errs   []Fact
		inPath string
	}{
		{"the node's 24 GiB /dev/shm is sized by statfs, not the container's 64 MiB",
			map[string]string{"proc/1/mountinfo": nodeMountinfo, "var/lib/containerd/x": ""},
			SHM{Mounted: true, FSType: "tmpfs", SizeBytes: 24 << 30, Source: SHMFromStatfs},
			Cgroup{Version: 2, Mode: "unified"}, "/var/lib/containerd /dev/nvme0n1", nil, ""},
		{"a node whose init shows only the older mounts format gives its size= option",
			map[string]string{"proc/1/mounts": nodeMounts},
			SHM{Mounted: true, FSType: "tmpfs", SizeBytes: 24 << 30, Source: SHMFromMountOption},
			Cgroup{Version: 2, Mode: "unified"}, "/ /dev/sda1", nil, ""},
		{"mountinfo is preferred to mounts when both are there",
			map[string]string{"proc/1/mountinfo": nodeMountinfo, "proc/1/mounts": containerMounts},
			SHM{Mounted: true, FSType: "tmpfs", SizeBytes: 24 << 30, Source: SHMFromStatfs},
			Cgroup{Version: 2, Mode: "unified"}, "/var/lib/containerd /dev/nvme0n1", nil, ""},
		{"without the node's table nothing is taken from the container's: mounts and shm fail",
			nil, SHM{}, Cgroup{}, "", []Fact{FactMounts, FactSHM}, "/proc/1/mountinfo"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reader{Root: podView(tc.node), Statfs: nodeStatfs}
			f, err := r.Read(context.Background(), Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if f.SHM != tc.shm {
				t.Errorf("shm = %+v, want %+v", f.SHM, tc.shm)
			}
			if !reflect.DeepEqual(f.Cgroup, tc.cgroup) {
				t.Errorf("cgroup = %+v, want %+v", f.Cgroup, tc.cgroup)
			}
			var disk string
			if d := f.Disks[0]; d.MountPoint != "" {
				disk = d.MountPoint + " " + d.Device
			}
			if disk != tc.disk {
				t.Errorf("containerd disk on %q, want %q", disk, tc.disk)
			}
			for _, k := range tc.errs {
				if e := f.Err(k); e == nil || !strings.Contains(e.Message, tc.inPath) {
					t.Errorf("%s: error %+v, want one naming %s", k, e, tc.inPath)
				}
			}
			if tc.errs == nil && f.Err(FactMounts) != nil {
				t.Errorf("mounts: %v", f.Err(FactMounts))
			}
		})
	}
}

// When sysfs is not visible under the host root (a non-recursive mount of /), the cgroup
// hierarchy still comes from the node's mount table.
func TestTheCgroupHierarchyComesFromTheNodesMountTable(t *testing.T) {
	cases := []struct {
		name  string
		table string
		want  Cgroup
	}{
		{"cgroup2 at /sys/fs/cgroup is unified", nodeMountinfo, Cgroup{Version: 2, Mode: "unified"}},
		{"a tmpfs with cgroup2 at unified is hybrid", "1 0 0:1 / /sys/fs/cgroup ro - tmpfs tmpfs ro\n" +
			"2 1 0:2 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n3 1 0:3 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
			Cgroup{Version: 1, Mode: "hybrid"}},
		{"a tmpfs with v1 controllers is legacy", "1 0 0:1 / /sys/fs/cgroup ro - tmpfs tmpfs ro\n" +
			"3 1 0:3 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n",
			Cgroup{Version: 1, Mode: "legacy"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reader{Root: podView(map[string]string{"proc/1/mountinfo": tc.table})}
			f, err := r.Read(context.Background(), Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f.Cgroup, tc.want) || f.Err(FactCgroup) != nil {
				t.Errorf("cgroup = %+v (%v), want %+v", f.Cgroup, f.Err(FactCgroup), tc.want)
			}
		})
	}
}

func TestParseMountinfo(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []Mount
	}{
		{"the mount's options come first, then the filesystem's it does not repeat",
			"28 27 0:25 / /dev/shm rw,nosuid,nodev shared:9 - tmpfs tmpfs rw,size=67108864k,inode64\n",
			[]Mount{{Device: "tmpfs", MountPoint: "/dev/shm", FSType: "tmpfs", Options: []string{"rw", "nosuid", "nodev", "size=67108864k", "inode64"}}}},
		{"a line without optional fields is read",
			"30 24 9:0 / /raid ro,relatime - ext4 /dev/md0 rw,stripe=256\n",
			[]Mount{{Device: "/dev/md0", MountPoint: "/raid", FSType: "ext4", Options: []string{"ro", "relatime", "stripe=256"}}}},
		{"octal escapes in the mount point and source are undone",
			`31 24 8:17 / /mnt/model\040cache rw shared:1 master:2 - ext4 /dev/disk\040a rw` + "\n",
			[]Mount{{Device: "/dev/disk a", MountPoint: "/mnt/model cache", FSType: "ext4", Options: []string{"rw"}}}},
		{"lines without the separator or its fields are skipped",
			"1 2 3:4 / /a rw\n1 2 3:4 / /b rw - ext4\nshort\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseMountinfo(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseMountinfo = %+v, want %+v", got, tc.want)
			}
		})
	}
}
