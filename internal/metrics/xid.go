package metrics

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/xid"
)

// maxXIDSeries bounds the XID counter's series: beyond it, new (GPU, code) pairs are
// counted in the node-level "other" series.
const maxXIDSeries = 1024

// xidKey is one series of gpunode_xid_errors_total.
type xidKey struct {
	uuid  string
	index int // -1: the XID's GPU is not known
	code  string
}

// XIDCounter counts the monitor's XID findings per GPU and code, as a real counter. Each
// source (kernel log, device events) is counted on its own and a series is the larger of
// its sources' counts: the driver reports one XID both ways, and either may miss some. It
// also keeps each GPU's last XID code for dcgm-exporter's DCGM_FI_DEV_XID_ERRORS. Safe
// for concurrent use.
type XIDCounter struct {
	mu     sync.Mutex
	counts map[xidKey]map[health.Source]uint64
	lastBy map[string]int // by UUID
}

// NewXIDCounter returns an empty counter.
func NewXIDCounter() *XIDCounter {
	return &XIDCounter{counts: map[xidKey]map[health.Source]uint64{}, lastBy: map[string]int{}}
}

// Observe is a monitor.Config.OnFinding hook: it counts the finding when it is an XID
// (cause "xid-N"), each observation once, whether or not it was new.
func (x *XIDCounter) Observe(f health.Finding, _ bool) {
	rest, ok := strings.CutPrefix(f.Cause, "xid-")
	if !ok {
		return
	}
	code, err := strconv.Atoi(rest)
	if err != nil || code <= 0 {
		return
	}
	label := "other"
	if _, known := xid.Lookup(code); known {
		label = strconv.Itoa(code)
	}
	k := xidKey{uuid: f.GPU, index: f.GPUIndex, code: label}
	if f.GPU == "" {
		k.index = -1
	}
	n := uint64(max(f.Count, 1))
	x.mu.Lock()
	defer x.mu.Unlock()
	by, ok := x.counts[k]
	if !ok {
		if len(x.counts) >= maxXIDSeries {
			k = xidKey{index: -1, code: "other"}
			by = x.counts[k]
		}
		if by == nil {
			by = map[health.Source]uint64{}
			x.counts[k] = by
		}
	}
	by[f.Source] += n
	if f.GPU != "" && (len(x.lastBy) < maxXIDSeries || x.lastBy[f.GPU] != 0) {
		x.lastBy[f.GPU] = code
	}
}

// last is the GPU's last XID code, 0 when it had none.
func (x *XIDCounter) last(uuid string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.lastBy[uuid]
}

// xidCount is one series' value.
type xidCount struct {
	key   xidKey
	value uint64
}

// series returns every series, sorted by GPU index and code.
func (x *XIDCounter) series() []xidCount {
	x.mu.Lock()
	out := make([]xidCount, 0, len(x.counts))
	for k, by := range x.counts {
		var v uint64
		for _, n := range by {
			v = max(v, n)
		}
		out = append(out, xidCount{k, v})
	}
	x.mu.Unlock()
	slices.SortFunc(out, func(a, b xidCount) int {
		return cmp.Or(cmp.Compare(a.key.index, b.key.index), cmp.Compare(a.key.uuid, b.key.uuid), cmp.Compare(a.key.code, b.key.code))
	})
	return out
}
