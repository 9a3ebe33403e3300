package xid

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
)

// Decoded is an event with what it means: its catalog row, gpunode's verdict in the fault
// taxonomy (Component, Severity, Action: the row's mapping, refined by what the message says
// and by correlation with other events of the same GPU) and why.
type Decoded struct {
	Event
	// Entry is the catalog row (Entry.Known false: the conservative default).
	Entry     Entry
	Component fault.Component
	Severity  fault.Severity
	Action    fault.Action
	// Consequence marks an event that follows another fault (45 after 94/95/48...): no new
	// fault; CausedBy is that XID when known.
	Consequence bool
	CausedBy    int
	// Drain means: let running work finish and schedule none, then take the Action
	// (48 with 63/64; the driver's "Drain and Reset"; a link-fatal NVLink error).
	Drain bool
	// RunDiagnostics means the pattern points at hardware: run diagnostics (gpunode runs
	// acceptance after the reset) before the GPU takes work again.
	RunDiagnostics bool
	// Reason says, in a sentence, why the event gets this verdict.
	Reason string
	// Link is the NVLink (or NVSwitch) link number, -1 when the message names none.
	Link int
	// Fatal is what an NVLink/NVSwitch message says about itself; nil when it says nothing.
	Fatal *bool
	// Unit is the NVLink5 sub-component an XID 144-150/155 names (RLW_SRC_TRACK, ...).
	Unit string
	// Registers are the raw words a message carries: XID 74 and 136 print seven, 144-150
	// print intrInfo, errorStatus and debug words, in printed order.
	Registers []uint32
	// RegisterNotes say what the set register bits mean (XID 74, from the catalog's
	// WORKFLOW_NVLINK_ERR) and what the NVLink5 flags say.
	RegisterNotes []string
	// RecoveryAction is the driver's new recovery action an XID 154 reports.
	RecoveryAction gpu.RecoveryAction
	// Location is the GPC/TPC an XID 13 names ("GPC 1, TPC 0"), empty when none.
	Location string
}

// DecodeOne decodes a single event on its own: the catalog row and what the message says,
// without correlation (Decode correlates a sequence).
func DecodeOne(ev Event) Decoded {
	if ev.Kind == KindSXid {
		return decodeSXid(ev)
	}
	e, _ := Lookup(ev.XID)
	d := Decoded{Event: ev, Entry: e, Component: e.Component, Severity: e.Severity, Action: e.Action,
		Link: -1, Reason: baseReason(e)}
	switch {
	case ev.XID == 13:
		d.Location = gpcTPC(ev.Message)
	case ev.XID == 45:
		if n, ok := causedBy(ev.Message); ok {
			d.markConsequence(n, fmt.Sprintf("the driver says it was caused by XID %d: no new fault, follow that XID", n))
		}
	case ev.XID == 74:
		decode74(&d)
	case ev.XID == 136:
		decode136(&d)
	case ev.XID >= 144 && ev.XID <= 150, ev.XID == 155:
		decodeNVLink5(&d)
	case ev.XID == 154:
		decode154(&d)
	}
	return d
}

func (d *Decoded) markConsequence(cause int, reason string) {
	d.Consequence, d.CausedBy = true, cause
	d.Severity, d.Action, d.Reason = fault.SeverityInfo, fault.ActionNone, reason
}

// bucketMeaning says what an immediate-action bucket asks for.
var bucketMeaning = map[string]string{
	"IGNORE":               "the catalog asks for no action",
	"RESTART_APP":          "restart the application; the GPU needs no reset",
	"RESET_GPU":            "reset the GPU",
	"RESTART_BM":           "reboot the node",
	"RESTART_VM":           "restart the VM that owns the GPU (on bare metal, the node)",
	"CONTACT_SUPPORT":      "a case for the vendor (RMA path)",
	"CHECK_UVM":            "reset the GPU if UVM or vGPU is in use",
	"XID_154":              "follow the recovery action XID 154 reports",
	"WORKFLOW_XID_13":      "restart the application; repeated on the same GPC/TPC: run diagnostics",
	"WORKFLOW_XID_31":      "restart the application; repeated on the same GPU: run diagnostics",
	"WORKFLOW_XID_45":      "alone: restart the fabric manager; with another XID: follow that one",
	"WORKFLOW_XID_48":      "alone: reset the GPU; with 63 or 64: drain, then reset",
	"WORKFLOW_NVLINK_ERR":  "decode the seven register words; the remote end of the link may be at fault",
	"WORKFLOW_NVLINK5_ERR": "decode intrInfo and errorStatus",
	"":                     "no bucket in the catalog: treated by its description",
}

// BucketMeaning says what a catalog immediate-action bucket asks for.
func BucketMeaning(bucket string) string {
	if m, ok := bucketMeaning[bucket]; ok {
		return m
	}
	return "unknown bucket"
}

func baseReason(e Entry) string {
	if e.Note != "" {
		return e.Note
	}
	return "catalog " + bucketOrNone(e.Bucket) + ": " + BucketMeaning(e.Bucket)
}

func bucketOrNone(b string) string {
	if b == "" {
		return "(no bucket)"
	}
	return b
}

// causedBy reads " caused by previous Xid N" in an XID 45 message.
func causedBy(msg string) (int, bool) {
	i := strings.Index(strings.ToLower(msg), "caused by previous xid ")
	if i < 0 {
		return 0, false
	}
	n, l := leadingNumber(msg[i+len("caused by previous xid "):], 6)
	return n, l > 0
}

// gpcTPC reads "(GPC 1, TPC 0" in an XID 13 message.
func gpcTPC(msg string) string {
	i := strings.Index(msg, "(GPC ")
	if i < 0 {
		return ""
	}
	s := msg[i+len("(GPC "):]
	g, n := leadingNumber(s, 4)
	if n == 0 {
		return ""
	}
	s, ok := strings.CutPrefix(s[n:], ", TPC ")
	if !ok {
		return ""
	}
	t, n := leadingNumber(s, 4)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("GPC %d, TPC %d", g, t)
}

// recoveryNames are the driver's names for its recovery actions (XID 154 text), and the
// numbers NVML uses (FI_DEV_GET_GPU_RECOVERY_ACTION).
var recoveryNames = []struct {
	name   string
	action gpu.RecoveryAction
}{
	{"none", gpu.RecoveryNone},
	{"gpu reset required", gpu.RecoveryGPUReset},
	{"node reboot required", gpu.RecoveryNodeReboot},
	{"drain p2p", gpu.RecoveryDrainP2P},
	{"drain and reset", gpu.RecoveryDrainAndReset},
	{"recover imex domain", "recover-imex-domain"},
}

// decode154 reads "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)".
func decode154(d *Decoded) {
	ra, ok := parseRecovery(d.Message)
	if !ok {
		d.Severity, d.Action = fault.SeverityWarning, fault.ActionNone
		d.Reason = "the recovery action in the message is not readable: read the NVML recovery-action field"
		return
	}
	d.RecoveryAction = ra
	switch ra {
	case gpu.RecoveryNone:
		d.Component, d.Severity, d.Action = fault.ComponentGPU, fault.SeverityInfo, fault.ActionNone
		d.Reason = "the driver needs no recovery action now"
	case gpu.RecoveryGPUReset:
		d.Component, d.Severity, d.Action = fault.ComponentGPU, fault.SeverityCritical, fault.ActionResetGPU
		d.Reason = "the driver asks for a GPU reset"
	case gpu.RecoveryNodeReboot:
		d.Component, d.Severity, d.Action = fault.ComponentNode, fault.SeverityCritical, fault.ActionRebootNode
		d.Reason = "the driver asks for a node reboot"
	case gpu.RecoveryDrainP2P:
		d.Component, d.Severity, d.Action = fault.ComponentInterconnect, fault.SeverityCritical, fault.ActionDrainP2P
		d.Reason = "the driver asks to drain peer-to-peer work"
	case gpu.RecoveryDrainAndReset:
		d.Component, d.Severity, d.Action, d.Drain = fault.ComponentGPU, fault.SeverityCritical, fault.ActionResetGPU, true
		d.Reason = "the driver asks to drain, then reset the GPU"
	case "recover-imex-domain":
		d.Component, d.Severity, d.Action = fault.ComponentInterconnect, fault.SeverityCritical, fault.ActionRebootNode
		d.Reason = "the driver asks to recover the IMEX domain; gpunode has no such action, a node reboot is the nearest"
	default:
		d.Severity, d.Action = fault.SeverityWarning, fault.ActionNone
		d.Reason = fmt.Sprintf("unknown recovery action %s: read the NVML recovery-action field", ra)
	}
}

func parseRecovery(msg string) (gpu.RecoveryAction, bool) {
	i := strings.LastIndex(msg, " to ")
	if i < 0 {
		return "", false
	}
	s := strings.TrimSpace(msg[i+len(" to "):])
	var num = -1
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		n := hexRun(h, 8)
		if v, err := strconv.ParseUint(h[:n], 16, 32); err == nil && n > 0 {
			num = int(v)
		}
	}
	if o := strings.IndexByte(s, '('); o >= 0 {
		if c := strings.IndexByte(s[o:], ')'); c > 0 {
			name := strings.ToLower(strings.TrimSpace(s[o+1 : o+c]))
			for _, r := range recoveryNames {
				if r.name == name {
					return r.action, true
				}
			}
		}
	}
	if num >= 0 && num < len(recoveryNames) {
		return recoveryNames[num].action, true
	}
	if num >= 0 {
		return gpu.RecoveryAction(fmt.Sprintf("unknown-%d", num)), true
	}
	return "", false
}

// decodeSXid gives an NVSwitch error its verdict from the severity word the driver prints.
func decodeSXid(ev Event) Decoded {
	d := Decoded{Event: ev, Link: -1, Component: fault.ComponentInterconnect,
		Entry: Entry{XID: ev.XID, Mnemonic: "SXID", Description: "NVSwitch error (SXid)",
			Component: fault.ComponentInterconnect, Severity: fault.SeverityWarning, Action: fault.ActionNone}}
	first, rest, _ := strings.Cut(ev.Message, ",")
	switch strings.ToLower(strings.TrimSpace(first)) {
	case "fatal":
		d.Fatal = ptr(true)
		d.Severity, d.Action = fault.SeverityCritical, fault.ActionRebootNode
		d.Reason = "fatal NVSwitch error: the switch and the GPUs behind it need a reset; gpunode reboots the node"
	case "non-fatal", "nonfatal":
		d.Fatal = ptr(false)
		d.Severity, d.Action = fault.SeverityWarning, fault.ActionNone
		d.Reason = "non-fatal NVSwitch error: no action; repeated ones point at the link"
	default:
		d.Severity, d.Action = fault.SeverityWarning, fault.ActionNone
		d.Reason = "NVSwitch error without a severity word: investigate"
	}
	if l, ok := linkAfter(rest, "Link "); ok {
		d.Link = l
	}
	return d
}

func ptr[T any](v T) *T { return &v }
