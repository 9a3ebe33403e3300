package host

import (
	"fmt"
	"strconv"
	"strings"
)

// GPUHost is what the host's PCI sysfs says about one GPU.
type GPUHost struct {
	UUID string `json:"uuid"`
	// BusID as given (NVML's form).
	BusID string `json:"busId"`
	// Address is the sysfs form, "0000:18:00.0".
	Address string `json:"address,omitempty"`
	// NUMANode is the GPU's NUMA node, -1 when the platform reports none.
	NUMANode int `json:"numaNode"`
	// LocalCPUList are the CPUs near the GPU ("0-55,112-167"); LocalCPUs their number.
	LocalCPUList string   `json:"localCpuList,omitempty"`
	LocalCPUs    int      `json:"localCpus"`
	Link         PCIeLink `json:"link"`
	// Errors lists the facts that could not be read.
	Errors map[Fact]FactError `json:"errors,omitempty"`
}

// Err returns the error recorded for a fact, or nil when the fact is valid.
func (g *GPUHost) Err(k Fact) *FactError {
	if e, ok := g.Errors[k]; ok {
		return &e
	}
	return nil
}

func (g *GPUHost) setErr(k Fact, err error) {
	if err == nil {
		return
	}
	if g.Errors == nil {
		g.Errors = map[Fact]FactError{}
	}
	g.Errors[k] = newFactError(err)
}

// PCIeLink is the GPU's PCIe link as sysfs reports it. GPUs lower their link speed when
// idle, so a current generation below the maximum means something only under load.
type PCIeLink struct {
	// Speed and MaxSpeed as sysfs writes them, e.g. "32.0 GT/s PCIe".
	Speed    string `json:"speed,omitempty"`
	MaxSpeed string `json:"maxSpeed,omitempty"`
	// Gen and MaxGen are the PCIe generations of those speeds (0 unknown).
	Gen    int `json:"gen"`
	MaxGen int `json:"maxGen"`
	// Width and MaxWidth are lane counts (0 unknown or link down).
	Width    int `json:"width"`
	MaxWidth int `json:"maxWidth"`
}

// Degraded reports whether a known current link is below its known maximum.
func (l PCIeLink) Degraded() bool {
	return (l.Gen > 0 && l.MaxGen > 0 && l.Gen < l.MaxGen) ||
		(l.Width > 0 && l.MaxWidth > 0 && l.Width < l.MaxWidth)
}

// SysfsAddress converts a PCI bus id in NVML's form ("00000000:18:00.0") or sysfs form
// ("0000:18:00.0", or "18:00.0" for domain 0) into the sysfs device name.
func SysfsAddress(busID string) (string, error) {
	parts := strings.Split(strings.TrimSpace(busID), ":")
	domain := "0"
	switch len(parts) {
	case 3:
		domain = parts[0]
		parts = parts[1:]
	case 2:
	default:
		return "", fmt.Errorf("bad PCI bus id %q: want DOMAIN:BUS:DEVICE.FUNCTION", busID)
	}
	dev, fn, ok := strings.Cut(parts[1], ".")
	d, derr := strconv.ParseUint(domain, 16, 32)
	b, berr := strconv.ParseUint(parts[0], 16, 8)
	v, verr := strconv.ParseUint(dev, 16, 8)
	f, ferr := strconv.ParseUint(fn, 16, 8)
	if !ok || domain == "" || derr != nil || berr != nil || verr != nil || ferr != nil || v > 0x1f || f > 7 {
		return "", fmt.Errorf("bad PCI bus id %q: want DOMAIN:BUS:DEVICE.FUNCTION", busID)
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", d, b, v, f), nil
}

// linkGens maps transfer rates (GT/s) to PCIe generations.
var linkGens = []struct {
	gts float64
	gen int
}{{2.5, 1}, {5, 2}, {8, 3}, {16, 4}, {32, 5}, {64, 6}, {128, 7}}

// ParseLinkSpeed reads a sysfs link speed such as "32.0 GT/s PCIe" or "8 GT/s" and returns
// its PCIe generation.
func ParseLinkSpeed(s string) (int, error) {
	num, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	gts, err := strconv.ParseFloat(num, 64)
	if err == nil {
		for _, lg := range linkGens {
			if gts == lg.gts {
				return lg.gen, nil
			}
		}
	}
	return 0, fmt.Errorf("unknown PCIe link speed %q", s)
}

// readGPUs reads each GPU's placement and link under /sys/bus/pci/devices.
func (r *Reader) readGPUs(refs []GPURef) []GPUHost {
	out := make([]GPUHost, 0, len(refs))
	for _, ref := range refs {
		out = append(out, r.readGPU(ref))
	}
	return out
}

func (r *Reader) readGPU(ref GPURef) GPUHost {
	g := GPUHost{UUID: ref.UUID, BusID: ref.BusID, NUMANode: -1}
	addr, err := SysfsAddress(ref.BusID)
	if err != nil {
		g.setErr(FactGPUAddress, err)
		return g
	}
	g.Address = addr
	dir := "/sys/bus/pci/devices/" + addr
	if err := r.stat(dir); err != nil {
		g.setErr(FactGPUAddress, fmt.Errorf("GPU %s not on the PCI bus: %w", ref.BusID, err))
		return g
	}
	if s, err := r.readString(dir + "/numa_node"); err != nil {
		g.setErr(FactGPUNUMA, err)
	} else if n, perr := strconv.Atoi(s); perr != nil || n < -1 {
		g.setErr(FactGPUNUMA, fmt.Errorf("parse %s/numa_node %q: not a node number", dir, s))
	} else {
		g.NUMANode = n
	}
	if s, err := r.readString(dir + "/local_cpulist"); err != nil {
		g.setErr(FactGPULocalCPU, err)
	} else if cpus, perr := ParseCPUList(s); perr != nil {
		g.setErr(FactGPULocalCPU, fmt.Errorf("%s/local_cpulist: %w", dir, perr))
	} else {
		g.LocalCPUList, g.LocalCPUs = s, len(cpus)
	}
	g.Link, err = r.readLink(dir)
	g.setErr(FactGPULink, err)
	return g
}

// readLink reads the four link files; the first error is returned, the rest still read.
func (r *Reader) readLink(dir string) (PCIeLink, error) {
	var l PCIeLink
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	speed := func(name string, raw *string, gen *int) {
		s, err := r.readString(dir + "/" + name)
		if err != nil {
			keep(err)
			return
		}
		*raw = s
		g, err := ParseLinkSpeed(s)
		if err != nil {
			keep(fmt.Errorf("%s/%s: %w", dir, name, err))
		}
		*gen = g
	}
	width := func(name string, dst *int) {
		s, err := r.readString(dir + "/" + name)
		if err != nil {
			keep(err)
			return
		}
		n, err := strconv.Atoi(strings.TrimPrefix(s, "x"))
		if err != nil || n < 0 {
			keep(fmt.Errorf("parse %s/%s %q: not a lane count", dir, name, s))
			return
		}
		*dst = n
	}
	speed("current_link_speed", &l.Speed, &l.Gen)
	speed("max_link_speed", &l.MaxSpeed, &l.MaxGen)
	width("current_link_width", &l.Width)
	width("max_link_width", &l.MaxWidth)
	return l, first
}
