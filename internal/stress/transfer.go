package stress

import (
	"fmt"
	"strconv"
	"strings"
)

// PCIeResult is a pinned host<->device copy measurement on one GPU. Rates
// count the bytes transferred once (not read plus written), 10^9 bytes/s.
type PCIeResult struct {
	Device     string
	Bytes      uint64 // size of one copy
	Iters      int    // copies timed per direction
	H2DSeconds float64
	D2HSeconds float64
	H2DGBps    float64
	D2HGBps    float64
}

// P2PResult is a peer-to-peer measurement from one GPU to another.
type P2PResult struct {
	Src, Dst       int // CUDA ordinals
	SrcDev, DstDev string
	// PeerAccess reports cuDeviceCanAccessPeer(dst's context -> src); without it
	// nothing else was measured.
	PeerAccess bool
	Bytes      uint64  // size of one bandwidth copy
	Iters      int     // bandwidth copies timed
	Seconds    float64 // GPU time of the bandwidth copies
	GBps       float64 // bytes transferred once per second, 10^9
	// LatencyUS is the mean time of one LatencyBytes copy, in microseconds,
	// from LatencyIters back-to-back copies.
	LatencyUS    float64
	LatencyBytes uint64
	LatencyIters int
}

// transferGBps is the rate of iters one-way transfers of bytes in secs.
func transferGBps(bytes uint64, iters int, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(bytes) * float64(iters) / secs / 1e9
}

// PCIeTheoreticalGBps is the payload bandwidth of one direction of a PCIe link
// of generation gen and width lanes, in 10^9 bytes/s: the lane rate (2.5, 5, 8,
// 16, 32, 64 GT/s for gen 1 to 6) times the line-code efficiency (8b/10b for
// gen 1 and 2, 128b/130b for gen 3 to 5, FLIT mode's 242/256 for gen 6), over
// 8 bits. Packet headers are not subtracted, so real copies reach about 85-90%.
// An unknown generation or width gives 0.
func PCIeTheoreticalGBps(gen, width int) float64 {
	var gts, eff float64
	switch gen {
	case 1:
		gts, eff = 2.5, 8.0/10
	case 2:
		gts, eff = 5, 8.0/10
	case 3:
		gts, eff = 8, 128.0/130
	case 4:
		gts, eff = 16, 128.0/130
	case 5:
		gts, eff = 32, 128.0/130
	case 6:
		gts, eff = 64, 242.0/256
	default:
		return 0
	}
	if width <= 0 {
		return 0
	}
	return gts * eff * float64(width) / 8
}

// Pair is an ordered pair of GPUs for the peer-to-peer test, by index in the
// caller's GPU list.
type Pair struct{ Src, Dst int }

// OrderedPairs lists every ordered pair of n GPUs (n*(n-1) pairs): each source
// in order, each destination in order.
func OrderedPairs(n int) []Pair {
	var out []Pair
	for s := range n {
		for d := range n {
			if s != d {
				out = append(out, Pair{Src: s, Dst: d})
			}
		}
	}
	return out
}

// BusID is a PCI address, domain:bus:device.function.
type BusID struct {
	Domain       uint32
	Bus, Dev, Fn uint8
}

// ParseBusID reads a PCI address as NVML ("00000000:18:00.0") or CUDA
// ("0000:18:00.0") writes it.
func ParseBusID(s string) (BusID, error) {
	bad := fmt.Errorf("%w: PCI bus id %q is not domain:bus:device.function", ErrBadInput, s)
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 3 {
		return BusID{}, bad
	}
	devFn := strings.Split(parts[2], ".")
	if len(devFn) != 2 {
		return BusID{}, bad
	}
	var id BusID
	for _, f := range []struct {
		s    string
		bits int
		set  func(uint64)
	}{
		{parts[0], 32, func(v uint64) { id.Domain = uint32(v) }},
		{parts[1], 8, func(v uint64) { id.Bus = uint8(v) }},
		{devFn[0], 5, func(v uint64) { id.Dev = uint8(v) }},
		{devFn[1], 3, func(v uint64) { id.Fn = uint8(v) }},
	} {
		v, err := strconv.ParseUint(f.s, 16, f.bits)
		if err != nil {
			return BusID{}, bad
		}
		f.set(v)
	}
	return id, nil
}

// DeviceInfo is one CUDA device as the driver numbers it.
type DeviceInfo struct {
	Ordinal    int    // CUDA device ordinal (CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER apply)
	Name       string // e.g. "NVIDIA H200"
	BusID      string // PCI bus id as CUDA formats it, e.g. "0000:18:00.0"
	TotalBytes uint64 // device memory
}
