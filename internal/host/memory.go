package host

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Memory is /proc/meminfo's view of RAM and huge pages.
type Memory struct {
	TotalKiB     uint64    `json:"totalKiB"`
	AvailableKiB uint64    `json:"availableKiB"`
	HugePages    HugePages `json:"hugePages"`
}

// HugePages is the default-size huge page pool.
type HugePages struct {
	Total   uint64 `json:"total"`
	Free    uint64 `json:"free"`
	SizeKiB uint64 `json:"sizeKiB"`
}

// SHM sources: how SHM.SizeBytes was found.
const (
	SHMFromMountOption = "mount-option"
	SHMFromStatfs      = "statfs"
	// SHMKernelDefault: tmpfs without size= is half of RAM.
	SHMKernelDefault = "kernel-default"
)

// SHM is the /dev/shm mount.
type SHM struct {
	Mounted   bool   `json:"mounted"`
	FSType    string `json:"fsType,omitempty"`
	SizeBytes uint64 `json:"sizeBytes"`
	// Source is one of the SHM* constants.
	Source string `json:"source,omitempty"`
}

// Mount is one line of a mount table (/proc/PID/mounts or /proc/PID/mountinfo).
type Mount struct {
	Device     string   `json:"device"`
	MountPoint string   `json:"mountPoint"`
	FSType     string   `json:"fsType"`
	Options    []string `json:"options,omitempty"`
}

// Option returns the value of a "key=value" mount option.
func (m Mount) Option(key string) (string, bool) {
	for _, o := range m.Options {
		if k, v, ok := strings.Cut(o, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// readMemory reads meminfo and sizes /dev/shm from the host's mount table, mounts, read
// from the file table ("" when none could be read: /dev/shm fails as the table did).
func (r *Reader) readMemory(f *Facts, mounts []Mount, table string) {
	if data, err := r.readFile("/proc/meminfo"); err != nil {
		f.setErr(FactMemory, err)
	} else {
		f.Memory = ParseMeminfo(string(data))
	}
	if table == "" {
		if e := f.Err(FactMounts); e != nil {
			f.Errors[FactSHM] = *e
		}
		return
	}
	var err error
	f.SHM, err = r.shm(mounts, table, f.Memory.TotalKiB)
	f.setErr(FactSHM, err)
}

// shm finds the size of the host's /dev/shm: the size= option of its line in the host's
// mount table (named table, for errors), else statfs of /dev/shm under the root, else the
// kernel default.
func (r *Reader) shm(mounts []Mount, table string, memTotalKiB uint64) (SHM, error) {
	m, ok := mountAt(mounts, "/dev/shm")
	if !ok {
		return SHM{}, fmt.Errorf("%s: nothing mounted at /dev/shm", table)
	}
	s := SHM{Mounted: true, FSType: m.FSType}
	if v, ok := m.Option("size"); ok {
		n, err := ParseTmpfsSize(v, memTotalKiB*1024)
		if err != nil {
			return s, fmt.Errorf("%s /dev/shm: %w", table, err)
		}
		s.SizeBytes, s.Source = n, SHMFromMountOption
		return s, nil
	}
	if r.Statfs != nil {
		st, err := r.Statfs("/dev/shm")
		if err == nil {
			s.SizeBytes, s.Source = st.TotalBytes, SHMFromStatfs
			return s, nil
		}
		if memTotalKiB == 0 {
			return s, err
		}
	}
	if memTotalKiB == 0 {
		return s, errors.New("/dev/shm has no size= option and memory size is unknown")
	}
	s.SizeBytes, s.Source = memTotalKiB*1024/2, SHMKernelDefault
	return s, nil
}

// mountAt returns the last mount whose mount point is exactly p (the one on top).
func mountAt(mounts []Mount, p string) (Mount, bool) {
	for i := len(mounts) - 1; i >= 0; i-- {
		if mounts[i].MountPoint == p {
			return mounts[i], true
		}
	}
	return Mount{}, false
}

// ParseTmpfsSize parses a tmpfs size= value: bytes with an optional k, m, g, t, p, e
// (binary) suffix, or a percentage of memBytes.
func ParseTmpfsSize(v string, memBytes uint64) (uint64, error) {
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.ParseUint(pct, 10, 64)
		hi, lo := bits.Mul64(memBytes, n)
		if err != nil || hi >= 100 {
			return 0, fmt.Errorf("bad tmpfs size %q", v)
		}
		q, _ := bits.Div64(hi, lo, 100)
		return q, nil
	}
	mult := uint64(1)
	if v != "" {
		if i := strings.IndexByte("kmgtpe", lower(v[len(v)-1])); i >= 0 {
			mult = 1 << (10 * (i + 1))
			v = v[:len(v)-1]
		}
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || (n != 0 && n > ^uint64(0)/mult) {
		return 0, fmt.Errorf("bad tmpfs size %q", v)
	}
	return n * mult, nil
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// ParseMeminfo reads the fields of /proc/meminfo that gpunode uses.
func ParseMeminfo(text string) Memory {
	var m Memory
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "MemTotal:":
			m.TotalKiB = v
		case "MemAvailable:":
			m.AvailableKiB = v
		case "HugePages_Total:":
			m.HugePages.Total = v
		case "HugePages_Free:":
			m.HugePages.Free = v
		case "Hugepagesize:":
			m.HugePages.SizeKiB = v
		}
	}
	return m
}

// ParseMounts parses /proc/PID/mounts (fstab format; octal escapes such as \040 undone).
func ParseMounts(text string) []Mount {
	var out []Mount
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 4 {
			continue
		}
		out = append(out, Mount{
			Device:     unescapeOctal(fields[0]),
			MountPoint: unescapeOctal(fields[1]),
			FSType:     fields[2],
			Options:    strings.Split(fields[3], ","),
		})
	}
	return out
}

// unescapeOctal undoes the kernel's \ooo escapes of space, tab, newline and backslash.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }
