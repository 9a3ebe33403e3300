package host

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// CPU is the processor as the kernel sees it.
type CPU struct {
	// Online is the number of online logical CPUs; OnlineList their list ("0-223").
	Online     int    `json:"online"`
	OnlineList string `json:"onlineList,omitempty"`
	// Model is the first "model name" of /proc/cpuinfo ("" on architectures without one).
	Model string `json:"model,omitempty"`
	// Sockets is the number of distinct "physical id"s in /proc/cpuinfo, 0 when unknown.
	Sockets int `json:"sockets,omitempty"`
	SMT     SMT `json:"smt"`
}

// SMT is simultaneous multithreading (Hyper-Threading).
type SMT struct {
	// Active: sibling threads are online (/sys/devices/system/cpu/smt/active).
	Active bool `json:"active"`
	// Control: "on", "off", "forceoff", "notsupported" or "notimplemented".
	Control string `json:"control,omitempty"`
}

// NUMANode is one NUMA node.
type NUMANode struct {
	ID int `json:"id"`
	// CPUList is the node's CPUs as sysfs lists them ("0-55,112-167"); CPUs their number.
	CPUList string `json:"cpuList"`
	CPUs    int    `json:"cpus"`
	// MemTotalKiB is the node's memory, 0 when unknown.
	MemTotalKiB uint64 `json:"memTotalKiB,omitempty"`
}

// maxCPUs bounds a CPU list, so a corrupt list cannot allocate without limit.
const maxCPUs = 1 << 16

// ParseCPUList parses a kernel CPU list such as "0-3,8,10-11" into sorted CPU numbers.
// An empty list is valid (a node without CPUs).
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("parse CPU list %q: bad CPU %q", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("parse CPU list %q: bad range %q", s, part)
			}
		}
		if b >= maxCPUs || len(cpus)+(b-a+1) > maxCPUs {
			return nil, fmt.Errorf("parse CPU list %q: more than %d CPUs", s, maxCPUs)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	sort.Ints(cpus)
	return cpus, nil
}

// readCPU reads online CPUs, cpuinfo, SMT and the NUMA nodes.
func (r *Reader) readCPU(f *Facts) {
	if s, err := r.readString("/sys/devices/system/cpu/online"); err != nil {
		f.setErr(FactCPUOnline, err)
	} else if cpus, perr := ParseCPUList(s); perr != nil {
		f.setErr(FactCPUOnline, perr)
	} else {
		f.CPU.Online, f.CPU.OnlineList = len(cpus), s
	}
	if data, err := r.readFile("/proc/cpuinfo"); err != nil {
		f.setErr(FactCPUInfo, err)
	} else {
		f.CPU.Model, f.CPU.Sockets = parseCPUInfo(string(data))
	}
	if s, err := r.readString("/sys/devices/system/cpu/smt/control"); err != nil {
		f.setErr(FactSMT, err)
	} else {
		f.CPU.SMT.Control = s
		if a, aerr := r.readString("/sys/devices/system/cpu/smt/active"); aerr != nil {
			f.setErr(FactSMT, aerr)
		} else {
			f.CPU.SMT.Active = a == "1"
		}
	}
	f.NUMANodes = r.readNUMA(f)
}

// parseCPUInfo returns the first model name and the number of distinct physical ids.
func parseCPUInfo(text string) (model string, sockets int) {
	ids := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		case "physical id":
			ids[strings.TrimSpace(v)] = true
		}
	}
	return model, len(ids)
}

// readNUMA reads /sys/devices/system/node/node*.
func (r *Reader) readNUMA(f *Facts) []NUMANode {
	const dir = "/sys/devices/system/node"
	ents, err := r.readDir(dir)
	if err != nil {
		f.setErr(FactNUMA, err)
		return nil
	}
	var nodes []NUMANode
	for _, e := range ents {
		id, ok := nodeID(e.Name())
		if !ok {
			continue
		}
		n := NUMANode{ID: id}
		p := dir + "/" + e.Name()
		s, err := r.readString(p + "/cpulist")
		if err == nil {
			var cpus []int
			if cpus, err = ParseCPUList(s); err == nil {
				n.CPUList, n.CPUs = s, len(cpus)
			}
		}
		f.setErr(FactNUMA, err)
		if data, merr := r.readFile(p + "/meminfo"); merr == nil {
			n.MemTotalKiB = nodeMemTotal(string(data))
		}
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	return nodes
}

// nodeID parses "node12" into 12.
func nodeID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "node")
	if !ok {
		return 0, false
	}
	id, err := strconv.Atoi(rest)
	return id, err == nil && id >= 0
}

// nodeMemTotal finds "Node 0 MemTotal:  528205712 kB" in a node's meminfo.
func nodeMemTotal(text string) uint64 {
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 4 && fields[2] == "MemTotal:" {
			v, _ := strconv.ParseUint(fields[3], 10, 64)
			return v
		}
	}
	return 0
}
