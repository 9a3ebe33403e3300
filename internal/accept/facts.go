package accept

import (
	"github.com/gpunode/gpunode/internal/frameworks"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/xid"
)

// Facts is everything the checks look at, gathered at the edges by the caller.
type Facts struct {
	// Node is the node's name (hostname).
	Node string
	// GPU is the backend's snapshot; GPUErr says why there is none.
	GPU    *gpu.Snapshot
	GPUErr error
	// Host facts; HostErr says why there are none.
	Host    *host.Facts
	HostErr error
	// XIDs seen in the kernel log since boot; KernelLogErr says why the log could not be read.
	XIDs []xid.Event
	// ClearedXIDs are XIDs since boot that a recovery step carried out since then covers
	// (a GPU reset for an XID whose action is a reset): they are reported, not counted.
	ClearedXIDs  []ClearedXID
	KernelLogErr error
	// Performance is what the performance layer (L4) measured; PerformanceErr says why
	// nothing was measured (no CUDA driver). Both nil: the layer's measurements were not
	// gathered.
	Performance    *Performance
	PerformanceErr error
	// Frameworks is the frameworks layer's (L5) report; FrameworksErr says why there is
	// none or why the tests could not run (frameworks.ErrNoPython, ErrNoTorch, ErrNoCUDA
	// make the layer skip; anything else fails it).
	Frameworks    *frameworks.Report
	FrameworksErr error
}

// ClearedXID is an XID a recovery step since boot cleared, and which step.
type ClearedXID struct {
	Event xid.Event `json:"event"`
	// By says which recovery, when: "gpu-reset at 2026-11-29T18:52:41Z".
	By string `json:"by"`
}
