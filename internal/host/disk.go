package host

import (
	"errors"
	"path"
	"strings"
)

// StatFS is the capacity of one filesystem.
type StatFS struct {
	TotalBytes uint64 `json:"totalBytes"`
	// FreeBytes is the space available to unprivileged users (statfs f_bavail).
	FreeBytes   uint64 `json:"freeBytes"`
	TotalInodes uint64 `json:"totalInodes"`
	FreeInodes  uint64 `json:"freeInodes"`
}

// Disk roles.
const (
	DiskContainerd = "containerd"
	DiskKubelet    = "kubelet"
	DiskCache      = "cache"
)

// Disk is the space and inodes left under one folder gpunode cares about.
type Disk struct {
	// Role is DiskContainerd, DiskKubelet or DiskCache.
	Role string `json:"role"`
	Path string `json:"path"`
	// MountPoint, FSType and Device of the mount holding Path (from /proc/mounts; symbolic
	// links in Path are not followed).
	MountPoint string `json:"mountPoint,omitempty"`
	FSType     string `json:"fsType,omitempty"`
	Device     string `json:"device,omitempty"`
	StatFS
	Error *FactError `json:"error,omitempty"`
}

// FreePercent is the free share of the space; ok is false when the size is unknown.
func (d Disk) FreePercent() (pct float64, ok bool) {
	return percent(d.FreeBytes, d.TotalBytes)
}

// FreeInodesPercent is the free share of the inodes; ok is false when the filesystem has
// no fixed inode count (btrfs, some overlay setups report 0).
func (d Disk) FreeInodesPercent() (pct float64, ok bool) {
	return percent(d.FreeInodes, d.TotalInodes)
}

func percent(free, total uint64) (float64, bool) {
	if total == 0 {
		return 0, false
	}
	return 100 * float64(free) / float64(total), true
}

// readDisks reads the containerd root, the kubelet root and the cache folders.
func (r *Reader) readDisks(opts Options, c Containerd, mounts []Mount) []Disk {
	croot := opts.ContainerdRoot
	if croot == "" && c.Config != nil {
		croot = c.Config.Root
	}
	if croot == "" {
		croot = DefaultContainerdRoot
	}
	kroot := opts.KubeletRoot
	if kroot == "" {
		kroot = DefaultKubeletRoot
	}
	disks := []Disk{{Role: DiskContainerd, Path: croot}, {Role: DiskKubelet, Path: kroot}}
	for _, d := range opts.CacheDirs {
		disks = append(disks, Disk{Role: DiskCache, Path: d})
	}
	for i := range disks {
		d := &disks[i]
		d.Path = path.Clean("/" + d.Path)
		if m, ok := mountOf(mounts, d.Path); ok {
			d.MountPoint, d.FSType, d.Device = m.MountPoint, m.FSType, m.Device
		}
		var err error
		if err = r.stat(d.Path); err == nil {
			if r.Statfs == nil {
				err = errors.New("statfs " + d.Path + ": no statfs function")
			} else {
				d.StatFS, err = r.Statfs(d.Path)
			}
		}
		if err != nil {
			e := newFactError(err)
			d.Error = &e
		}
	}
	return disks
}

// mountOf returns the mount holding p: the longest mount point that contains it (the last
// such line when several mounts stack on one point).
func mountOf(mounts []Mount, p string) (Mount, bool) {
	var best Mount
	found := false
	for _, m := range mounts {
		mp := m.MountPoint
		inside := mp == "/" || p == mp || strings.HasPrefix(p, mp+"/")
		if inside && (!found || len(mp) >= len(best.MountPoint)) {
			best, found = m, true
		}
	}
	return best, found
}
