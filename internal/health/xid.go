package health

import (
	"fmt"
	"time"

	"github.com/gpunode/gpunode/internal/xid"
)

// FromXID is the finding of one decoded kernel-log XID (or NVSwitch SXid) seen at t: the
// catalog's component, severity and action (after correlation), cause xid-N (sxid-N), the
// driver's line as evidence. It names no GPU (GPUIndex -1): the caller maps the event's
// bus address to the node's GPUs. The health monitor and doctor both judge XIDs by it.
func FromXID(d xid.Decoded, t time.Time) Finding {
	f := Finding{GPUIndex: -1, Component: d.Component, Severity: d.Severity, Action: d.Action,
		Source: SourceKmsg, Cause: XIDCause(d.XID), FirstSeen: t, LastSeen: t, Count: 1,
		Summary: fmt.Sprintf("XID %d %s: %s", d.XID, d.Entry.Mnemonic, d.Reason)}
	if d.Line != "" {
		f.Evidence = []string{d.Line}
	}
	if d.Kind == xid.KindSXid {
		f.Cause = fmt.Sprintf("sxid-%d", d.XID)
		f.Summary = fmt.Sprintf("NVSwitch %s SXid %d: %s", d.PCI, d.XID, d.Reason)
	}
	return f
}
