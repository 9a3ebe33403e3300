package doctor

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/rules"
	"github.com/gpunode/gpunode/internal/xid"
)

// GPURef names one GPU the way a person finds it: the index nvidia-smi shows, the UUID the
// device plugin and the scheduler use, and the PCI bus ID the kernel log prints.
type GPURef struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid,omitempty"`
	BusID string `json:"busId,omitempty"`
}

// Name is "GPU 2", or "GPU at 0000:3a:00" for a GPU the driver no longer lists.
func (g GPURef) Name() string {
	if g.Index < 0 {
		return "GPU at " + g.BusID
	}
	return fmt.Sprintf("GPU %d", g.Index)
}

// IDs is the UUID and bus ID, as known.
func (g GPURef) IDs() string {
	var ids []string
	for _, id := range []string{g.UUID, g.BusID} {
		if id != "" {
			ids = append(ids, id)
		}
	}
	return strings.Join(ids, ", ")
}

// String is "GPU 2 (GPU-…, 00000000:3A:00.0)".
func (g GPURef) String() string {
	s := fmt.Sprintf("GPU %d", g.Index)
	if g.Index < 0 {
		s = "GPU"
	}
	if ids := g.IDs(); ids != "" {
		s += " (" + ids + ")"
	}
	return s
}

// Finding is one fault doctor found on a GPU, judged by the health monitor's rules.
type Finding struct {
	// Cause is the monitor's stable key: "gpu-lost", "xid-79", "row-remap-pending".
	Cause    string         `json:"cause"`
	Summary  string         `json:"summary"`
	Severity fault.Severity `json:"severity"`
	// Action is what must happen to clear the fault.
	Action fault.Action `json:"action"`
	// Source is where it came from: "counter" (the GPU's own facts) or "kmsg" (the kernel log).
	Source    string   `json:"source"`
	Evidence  []string `json:"evidence,omitempty"`
	unhealthy bool
}

// gpuProbes judges every GPU with the rules the health monitor and acceptance use: the
// snapshot through health.FromSnapshot (the default counter policy), and the kernel log's
// XIDs since boot through the XID catalog and its correlation rules. A GPU with a finding
// that takes it out of service (health.Finding.Unhealthy: a lost GPU, a pending row remap,
// an XID that needs a GPU reset or more) is a broken probe; one whose findings only degrade
// it is a warning; a node whose GPUs have no finding gets one passing probe.
func gpuProbes(f Facts) []Probe {
	byGPU := map[string]*gpuProbe{}
	var order []*gpuProbe
	at := func(ref GPURef) *gpuProbe {
		k := ref.UUID
		if k == "" {
			k = "pci " + ref.BusID
		}
		if g, ok := byGPU[k]; ok {
			return g
		}
		g := &gpuProbe{ref: ref}
		byGPU[k] = g
		order = append(order, g)
		return g
	}
	refs := gpuRefs(f.Snapshot)
	for _, hf := range health.FromSnapshot(nil, f.Snapshot, rules.DefaultThresholds()) {
		ref := GPURef{Index: hf.GPUIndex, UUID: hf.GPU}
		if r, ok := refs.byUUID[hf.GPU]; ok {
			ref = r
		}
		at(ref).add(fromHealth(hf))
	}
	for _, xf := range kernelFindings(f.XIDs, refs) {
		at(xf.ref).add(xf.finding)
	}
	slices.SortStableFunc(order, func(a, b *gpuProbe) int { return cmp.Compare(a.ref.Index, b.ref.Index) })

	var ps []Probe
	for _, g := range order {
		if p, ok := g.probe(); ok {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		n := 0
		if f.Snapshot != nil {
			n = len(f.Snapshot.Devices)
		}
		detail := fmt.Sprintf("%d GPUs answer; no pending row remap or page retirement, no XID since boot that needs a reset", n)
		if f.KernelLogErr != nil {
			detail = fmt.Sprintf("%d GPUs answer; no pending row remap or page retirement (kernel log not read: XIDs not judged)", n)
		}
		ps = append(ps, Probe{Name: "GPU health", Status: OK, Detail: detail, Command: "nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT"})
	}
	return ps
}

// gpuProbe collects one GPU's findings.
type gpuProbe struct {
	ref      GPURef
	findings []Finding
}

// add keeps one finding per cause: a repeat (the XID 79 line and the driver's own
// fallen-off-the-bus line) adds its evidence to the first.
func (g *gpuProbe) add(f Finding) {
	if !f.unhealthy && f.Severity == fault.SeverityInfo && f.Action == fault.ActionNone {
		return // a fact worth a metric, not a verdict (the lifetime ECC count)
	}
	for i := range g.findings {
		if g.findings[i].Cause == f.Cause {
			e := &g.findings[i]
			e.Evidence = append(e.Evidence, f.Evidence...)
			e.Severity, e.Action = fault.MaxSeverity(e.Severity, f.Severity), fault.Max(e.Action, f.Action)
			e.unhealthy = e.unhealthy || f.unhealthy
			return
		}
	}
	g.findings = append(g.findings, f)
}

// probe is the GPU's verdict; false when nothing is wrong with it.
func (g *gpuProbe) probe() (Probe, bool) {
	var worst *Finding
	status := OK
	for i := range g.findings {
		f := &g.findings[i]
		switch {
		case f.unhealthy:
			status = Broken
		case status == OK && (f.Severity == fault.SeverityWarning || f.Action.Rank() > fault.ActionNone.Rank()):
			status = Warn
		}
		if worst == nil || f.Action.Rank() > worst.Action.Rank() ||
			(f.Action == worst.Action && f.Severity.Rank() > worst.Severity.Rank()) {
			worst = f
		}
	}
	if status == OK {
		return Probe{}, false
	}
	slices.SortStableFunc(g.findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(b.Action.Rank(), a.Action.Rank()), cmp.Compare(b.Severity.Rank(), a.Severity.Rank()))
	})
	var causes []string
	for _, f := range g.findings {
		causes = append(causes, f.Cause+": "+f.Summary)
	}
	ref := g.ref
	p := Probe{Name: ref.Name(), Status: status, GPU: &ref, Findings: g.findings,
		Detail:  strings.Join(causes, "; "),
		Command: fmt.Sprintf("nvidia-smi -q -i %s; dmesg | grep -i xid", gpuSelector(ref))}
	p.Cause = ref.String() + ": " + worst.Summary
	p.Fix = fixFor(*worst, ref)
	return p, true
}

// fixFor says what to do about the GPU's worst finding: the fix of its cause (the rule's,
// internal/rules.Fix), else, for an XID, the fix of the action its catalog row and
// correlation decided, naming the command that explains the code.
func fixFor(f Finding, g GPURef) string {
	if fix := rules.Fix(f.Cause, f.Action, gpuSelector(g)); fix != "" {
		if f.unhealthy || f.Action.Rank() >= fault.ActionResetGPU.Rank() {
			fix += "; then run `gpunode accept --layers hardware`"
		}
		return fix
	}
	fix := actionFix(f.Action, g)
	if code, ok := strings.CutPrefix(f.Cause, "xid-"); ok {
		fix += fmt.Sprintf(" (`gpunode xid explain %s` says why)", code)
	}
	return fix
}

// actionFix says what to do next for the action a fault requires.
func actionFix(a fault.Action, g GPURef) string {
	switch a {
	case fault.ActionRestartApp:
		return "restart the application that hit the fault; the GPU stays in service"
	case fault.ActionDrainP2P:
		return "let running work finish and schedule no peer-to-peer work until the GPU is reset"
	case fault.ActionResetGPU:
		return fmt.Sprintf("drain the GPU's workloads, then reset it (`nvidia-smi -r -i %s`, or let gpunode's remediation do it); then run `gpunode accept --layers hardware`", gpuSelector(g))
	case fault.ActionReloadDriver:
		return "drain the node, then reload the NVIDIA driver (or reboot the node); then run `gpunode doctor` again"
	case fault.ActionRebootNode:
		return "capture `dmesg`, drain the node and reboot it; a GPU that fails again after the reboot needs service"
	case fault.ActionService:
		return "drain the node and have the GPU serviced (RMA): it must not take work again"
	default:
		return fmt.Sprintf("%s stays in service: the finding says what to check; `gpunode monitor` follows it", g.Name())
	}
}

// gpuSelector is the GPU as nvidia-smi's -i takes it.
func gpuSelector(g GPURef) string {
	switch {
	case g.UUID != "":
		return g.UUID
	case g.Index >= 0:
		return fmt.Sprint(g.Index)
	default:
		return g.BusID
	}
}

func fromHealth(f health.Finding) Finding {
	return Finding{Cause: f.Cause, Summary: f.Summary, Severity: f.Severity, Action: f.Action,
		Source: string(f.Source), Evidence: f.Evidence, unhealthy: f.Unhealthy()}
}

// refs finds a GPU's index, UUID and bus ID from the snapshot.
type refs struct {
	byUUID map[string]GPURef
	byPCI  map[string]GPURef
}

func gpuRefs(s *gpu.Snapshot) refs {
	r := refs{byUUID: map[string]GPURef{}, byPCI: map[string]GPURef{}}
	if s == nil {
		return r
	}
	for _, d := range s.Devices {
		ref := GPURef{Index: d.Index, UUID: d.UUID, BusID: d.PCI.BusID}
		if d.UUID != "" {
			r.byUUID[d.UUID] = ref
		}
		if d.PCI.BusID != "" {
			r.byPCI[xid.NormalizeBusID(d.PCI.BusID)] = ref
		}
	}
	return r
}

// lookup finds the GPU a kernel-log event names: by the UUID the log attributed, else by
// its PCI address; a GPU the snapshot does not list keeps the log's own address.
func (r refs) lookup(ev xid.Event) GPURef {
	if g, ok := r.byUUID[ev.UUID]; ok && ev.UUID != "" {
		return g
	}
	if g, ok := r.byPCI[xid.NormalizeBusID(ev.PCI)]; ok {
		return g
	}
	return GPURef{Index: -1, UUID: ev.UUID, BusID: ev.PCI}
}

type kernelFinding struct {
	ref     GPURef
	finding Finding
}

// kernelFindings judges the kernel log's GPU XIDs since boot as the health monitor judges
// the lines it follows: the catalog row refined by the message and by correlation with the
// same GPU's other XIDs; a consequence of an earlier XID is no fault of its own. NVSwitch
// SXids are not a GPU's.
func kernelFindings(events []xid.Event, r refs) []kernelFinding {
	var out []kernelFinding
	for _, d := range xid.Decode(events, xid.DefaultOptions()) {
		if d.Consequence || d.Kind == xid.KindSXid {
			continue
		}
		f := fromHealth(health.FromXID(d, time.Time{}))
		f.Summary = fmt.Sprintf("XID %d %s since boot: %s", d.XID, d.Entry.Mnemonic, d.Reason)
		out = append(out, kernelFinding{ref: r.lookup(d.Event), finding: f})
	}
	return out
}
