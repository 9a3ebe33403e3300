package host

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// readOS reads the distribution, the kernel and the cgroup hierarchy (from the host's
// mount table when it tells).
func (r *Reader) readOS(f *Facts, mounts []Mount) {
	if data, err := r.readFile("/etc/os-release"); err != nil {
		f.setErr(FactOSRelease, err)
	} else {
		f.OS = ParseOSRelease(string(data))
	}
	if s, err := r.readString("/proc/sys/kernel/osrelease"); err != nil {
		f.setErr(FactKernelRelease, err)
	} else {
		f.Kernel.Release = s
	}
	if s, err := r.readString("/proc/version"); err != nil {
		f.setErr(FactKernelVersion, err)
	} else {
		f.Kernel.Version = s
	}
	if s, err := r.readString("/proc/sys/kernel/tainted"); err != nil {
		f.setErr(FactKernelTainted, err)
	} else if t, perr := strconv.ParseUint(s, 10, 64); perr != nil {
		f.setErr(FactKernelTainted, fmt.Errorf("parse /proc/sys/kernel/tainted %q: %w", s, perr))
	} else {
		f.Kernel.Tainted = t
	}
	f.Cgroup = r.readCgroup(mounts)
	if f.Cgroup.Version == 0 {
		f.setErr(FactCgroup, errors.New("no cgroup hierarchy under /sys/fs/cgroup"))
	}
}

// readCgroup finds the hierarchy: from the host's mount table when it has
// /sys/fs/cgroup (cgroupFromMounts), else from the files: cgroup.controllers at the root
// means the unified (v2) hierarchy; one in /sys/fs/cgroup/unified means hybrid; controller
// folders mean legacy. The v2 root's controllers are read from cgroup.controllers.
func (r *Reader) readCgroup(mounts []Mount) Cgroup {
	data, err := r.readFile("/sys/fs/cgroup/cgroup.controllers")
	if c, ok := cgroupFromMounts(mounts); ok {
		if c.Version == 2 && err == nil {
			c.Controllers = strings.Fields(string(data))
		}
		return c
	}
	if err == nil {
		return Cgroup{Version: 2, Mode: "unified", Controllers: strings.Fields(string(data))}
	}
	if r.exists("/sys/fs/cgroup/unified/cgroup.controllers") {
		return Cgroup{Version: 1, Mode: "hybrid"}
	}
	for _, c := range []string{"memory", "cpu,cpuacct", "cpu", "devices", "pids"} {
		if r.exists("/sys/fs/cgroup/" + c) {
			return Cgroup{Version: 1, Mode: "legacy"}
		}
	}
	return Cgroup{}
}

// ParseOSRelease parses os-release(5) text: KEY=value lines, values optionally quoted.
func ParseOSRelease(text string) OSRelease {
	var o OSRelease
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		v = unquote(strings.TrimSpace(v))
		switch k {
		case "ID":
			o.ID = v
		case "VERSION_ID":
			o.VersionID = v
		case "PRETTY_NAME":
			o.PrettyName = v
		case "VERSION_CODENAME":
			o.Codename = v
		}
	}
	return o
}

// unquote removes one pair of matching single or double quotes and undoes the shell
// escapes os-release allows inside double quotes.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		q := v[0]
		v = v[1 : len(v)-1]
		if q == '"' {
			v = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\$`, `$`, "\\`", "`").Replace(v)
		}
	}
	return v
}
