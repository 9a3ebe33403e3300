package xid

//go:generate go run ./gen -in catalog.tsv -out catalog_gen.go

import (
	"sort"

	"github.com/gpunode/gpunode/internal/fault"
)

// Entry is one row of the XID catalog: NVIDIA's columns and gpunode's mapping onto the
// fault taxonomy. The rows live in catalog.tsv; catalog_gen.go is generated from it.
type Entry struct {
	XID         int    `json:"xid"`
	Mnemonic    string `json:"mnemonic"`
	Description string `json:"description"`
	// Applies says on which GPU generations the catalog expects the XID.
	Applies Applies `json:"applies"`
	// Bucket is the catalog's immediate action (IGNORE, RESET_GPU, WORKFLOW_XID_48, ...);
	// empty where the catalog has none.
	Bucket string `json:"immediateAction"`
	// Investigatory is the catalog's investigatory action, as written there.
	Investigatory string `json:"investigatoryAction,omitempty"`
	// Raises154Since is the CUDA and driver release since which the XID also raises XID 154.
	Raises154Since string          `json:"raises154Since,omitempty"`
	Component      fault.Component `json:"component"`
	Severity       fault.Severity  `json:"severity"`
	Action         fault.Action    `json:"action"`
	// Note explains gpunode's mapping where the bucket alone does not.
	Note string `json:"note,omitempty"`
	// Known is false for the conservative default given to an XID not in the catalog.
	Known bool `json:"known"`
}

// Applies lists the GPU generations a catalog row applies to.
type Applies struct {
	A100  bool `json:"a100"`
	H100  bool `json:"h100"`
	B100  bool `json:"b100"`
	GB200 bool `json:"gb200"`
}

// unknownNote explains the default for an XID the catalog does not list.
const unknownNote = "Not in gpunode's catalog: a warning for a person to investigate, no automatic action. " +
	"Drivers since R565 also report their own verdict as XID 154 and in the NVML recovery-action field, which decide."

// Lookup returns the catalog row for an XID. An XID not in the catalog gets a conservative
// default, returned with false: component gpu, severity warning, action none (investigate).
func Lookup(code int) (Entry, bool) {
	i := sort.Search(len(catalog), func(i int) bool { return catalog[i].XID >= code })
	if i < len(catalog) && catalog[i].XID == code {
		return catalog[i], true
	}
	return Entry{XID: code, Mnemonic: "UNKNOWN", Description: "not in the catalog",
		Component: fault.ComponentGPU, Severity: fault.SeverityWarning, Action: fault.ActionNone,
		Note: unknownNote}, false
}
