package host

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// hostMountTables are the files the host's mount table is read from, in order: the mount
// table of the host's init process (PID 1 of the procfs under the root). Never
// /proc/mounts: that is a link to /proc/self/mounts, the mount table of the process that
// reads it. In a DaemonSet pod that mounts the host's / at /host, /host/proc is the host's
// procfs, yet /host/proc/self still resolves to the agent, so /host/proc/mounts lists the
// agent container's mounts: its overlay root and its 64 MiB /dev/shm, not the node's.
var hostMountTables = []string{"/proc/1/mountinfo", "/proc/1/mounts"}

// readMounts reads the host's mount table (hostMountTables); it records FactMounts when
// none can be read and returns the file it read.
func (r *Reader) readMounts(f *Facts) ([]Mount, string) {
	var errs []error
	for _, p := range hostMountTables {
		data, err := r.readFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if strings.HasSuffix(p, "/mountinfo") {
			return ParseMountinfo(string(data)), p
		}
		return ParseMounts(string(data)), p
	}
	f.setErr(FactMounts, fmt.Errorf("the host's mount table (its init process's, not the reader's /proc/mounts): %w", errors.Join(errs...)))
	return nil, ""
}

// ParseMountinfo parses /proc/PID/mountinfo (proc(5)): "ID PARENT MAJ:MIN ROOT MOUNTPOINT
// OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS". A Mount's Options are the mount's own
// options followed by the filesystem's (super block) options it does not repeat, as
// /proc/mounts shows them; octal escapes are undone. Malformed lines are skipped.
func ParseMountinfo(text string) []Mount {
	var out []Mount
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		sep := slices.Index(fields, "-")
		if sep < 6 || len(fields) < sep+3 {
			continue
		}
		opts := strings.Split(fields[5], ",")
		if sep+3 < len(fields) {
			for _, o := range strings.Split(fields[sep+3], ",") {
				if o != "rw" && o != "ro" && !slices.Contains(opts, o) {
					opts = append(opts, o)
				}
			}
		}
		out = append(out, Mount{
			Device:     unescapeOctal(fields[sep+2]),
			MountPoint: unescapeOctal(fields[4]),
			FSType:     fields[sep+1],
			Options:    opts,
		})
	}
	return out
}

// cgroupFromMounts finds the cgroup hierarchy from the mount table: cgroup2 at
// /sys/fs/cgroup is unified; a tmpfs there with cgroup2 at /sys/fs/cgroup/unified is hybrid,
// with v1 controllers below it legacy. ok is false when the table does not tell.
func cgroupFromMounts(mounts []Mount) (c Cgroup, ok bool) {
	m, found := mountAt(mounts, "/sys/fs/cgroup")
	switch {
	case !found:
		return Cgroup{}, false
	case m.FSType == "cgroup2":
		return Cgroup{Version: 2, Mode: "unified"}, true
	case m.FSType == "cgroup":
		return Cgroup{Version: 1, Mode: "legacy"}, true
	}
	if u, ok := mountAt(mounts, "/sys/fs/cgroup/unified"); ok && u.FSType == "cgroup2" {
		return Cgroup{Version: 1, Mode: "hybrid"}, true
	}
	for _, m := range mounts {
		if m.FSType == "cgroup" && strings.HasPrefix(m.MountPoint, "/sys/fs/cgroup/") {
			return Cgroup{Version: 1, Mode: "legacy"}, true
		}
	}
	return Cgroup{}, false
}
