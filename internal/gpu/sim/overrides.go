package sim

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/yamlfile"
)

var (
	uuidRE  = regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	states  = []string{"", "not-supported", "not-started", "in-progress", "completed"}
	widths  = []int{1, 2, 4, 8, 16, 32}
	maxLink = 32
)

// applyGPUSpecs applies the overrides in order; n is the gpus list node, for lines.
func applyGPUSpecs(name string, n *yaml.Node, specs []gpuSpec, devs []gpu.Device, size string) error {
	seen := map[int]int{}
	for i, sp := range specs {
		itemNode := yamlfile.Item(n, i)
		bad := func(key, format string, args ...any) error {
			return &ScenarioError{File: name, Line: lineOf(itemNode, key), Msg: fmt.Sprintf(format, args...)}
		}
		if sp.Index == nil {
			return bad("index", "gpus[%d] needs an index", i)
		}
		idx := *sp.Index
		if idx < 0 || idx >= len(devs) {
			return bad("index", "gpu index %d out of range (%s)", idx, size)
		}
		if first, dup := seen[idx]; dup {
			return bad("index", "gpu index %d overridden twice (first at line %d)", idx, first)
		}
		seen[idx] = lineOf(itemNode, "index")
		if p := applyGPUSpec(sp, &devs[idx]); p != nil {
			return &ScenarioError{File: name, Line: lineOf(itemNode, p.field), Msg: p.msg}
		}
	}
	return nil
}

// applyGPUSpec applies one override to d; on a problem it returns the key and the message.
func applyGPUSpec(sp gpuSpec, d *gpu.Device) *problem {
	if sp.UUID != nil && !uuidRE.MatchString(*sp.UUID) {
		return &problem{"uuid", fmt.Sprintf("uuid %q is not GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (lower-case hex)", *sp.UUID)}
	}
	setIf(&d.UUID, sp.UUID)
	setIf(&d.Name, sp.Name)
	setIf(&d.Serial, sp.Serial)
	setIf(&d.Brand, sp.Brand)
	setIf(&d.Architecture, sp.Architecture)
	if c := sp.ComputeCapability; c != nil {
		setIf(&d.ComputeCapability.Major, c.Major)
		setIf(&d.ComputeCapability.Minor, c.Minor)
	}
	setIf(&d.VBIOS, sp.VBIOS)
	setIf(&d.PersistenceMode, sp.PersistenceMode)
	setIf(&d.NUMANode, sp.NUMANode)
	if m := sp.Memory; m != nil {
		setIf(&d.Memory.TotalMiB, m.TotalMiB)
		setIf(&d.Memory.UsedMiB, m.UsedMiB)
	}
	if p := applyPCIe(sp.PCIe, d); p != nil {
		return p
	}
	if e := sp.ECC; e != nil {
		setIf(&d.ECC.Enabled, e.Enabled)
		setIf(&d.ECC.PendingEnabled, e.PendingEnabled)
		setIf(&d.ECC.VolatileCorrected, e.VolatileCorrected)
		setIf(&d.ECC.VolatileUncorrected, e.VolatileUncorrected)
		setIf(&d.ECC.AggregateCorrected, e.AggregateCorrected)
		setIf(&d.ECC.AggregateUncorrected, e.AggregateUncorrected)
	}
	if r := sp.RetiredPages; r != nil {
		setIf(&d.RetiredPages.SingleBit, r.SingleBit)
		setIf(&d.RetiredPages.DoubleBit, r.DoubleBit)
		setIf(&d.RetiredPages.Pending, r.Pending)
		delete(d.Errors, gpu.FieldRetiredPages)
	}
	if r := sp.RowRemap; r != nil {
		setIf(&d.RowRemap.Correctable, r.Correctable)
		setIf(&d.RowRemap.Uncorrectable, r.Uncorrectable)
		setIf(&d.RowRemap.Pending, r.Pending)
		setIf(&d.RowRemap.Failure, r.Failure)
	}
	if t := sp.Thermal; t != nil {
		setIf(&d.Thermal.GPUC, t.GPUC)
		setIf(&d.Thermal.MemoryC, t.MemoryC)
		setIf(&d.Thermal.SlowdownC, t.SlowdownC)
		setIf(&d.Thermal.ShutdownC, t.ShutdownC)
		setIf(&d.Thermal.MaxOpC, t.MaxOpC)
	}
	if p := sp.Power; p != nil {
		setIf(&d.Power.DrawW, p.DrawW)
		setIf(&d.Power.LimitW, p.LimitW)
		setIf(&d.Power.DefaultLimitW, p.DefaultLimitW)
	}
	if m := sp.MIG; m != nil {
		setIf(&d.MIG.Capable, m.Capable)
		setIf(&d.MIG.Enabled, m.Enabled)
		setIf(&d.MIG.PendingEnabled, m.PendingEnabled)
		if p := applyMIGDevices(m.Devices, d); p != nil {
			return p
		}
	}
	return applyState(sp, d)
}

func applyPCIe(p *pcieSpec, d *gpu.Device) *problem {
	if p == nil {
		return nil
	}
	if p.BusID != nil {
		if _, _, _, _, ok := splitBusID(*p.BusID); !ok {
			return &problem{"pcie.busId", fmt.Sprintf("busId %q is not DDDDDDDD:BB:DD.F (hex)", *p.BusID)}
		}
	}
	gens := []struct {
		key string
		v   *int
	}{{"linkGen", p.LinkGen}, {"linkGenMax", p.LinkGenMax}, {"linkGenMaxDevice", p.LinkGenMaxDevice}}
	for _, g := range gens {
		if g.v != nil && (*g.v < 1 || *g.v > 6) {
			return &problem{"pcie." + g.key, fmt.Sprintf("%s %d out of range (1-6)", g.key, *g.v)}
		}
	}
	for _, w := range []struct {
		key string
		v   *int
	}{{"linkWidth", p.LinkWidth}, {"linkWidthMax", p.LinkWidthMax}} {
		if w.v != nil && !slices.Contains(widths, *w.v) {
			return &problem{"pcie." + w.key, fmt.Sprintf("%s %d is not a PCIe width (1, 2, 4, 8, 16, 32)", w.key, *w.v)}
		}
	}
	setIf(&d.PCI.BusID, p.BusID)
	setIf(&d.PCI.DeviceID, p.DeviceID)
	setIf(&d.PCI.SubsystemID, p.SubsystemID)
	setIf(&d.PCI.LinkGen, p.LinkGen)
	setIf(&d.PCI.LinkGenMax, p.LinkGenMax)
	setIf(&d.PCI.LinkGenMaxDevice, p.LinkGenMaxDevice)
	setIf(&d.PCI.LinkWidth, p.LinkWidth)
	setIf(&d.PCI.LinkWidthMax, p.LinkWidthMax)
	setIf(&d.PCI.ReplayCounter, p.ReplayCounter)
	return nil
}

// applyState applies the overrides with a closed set of values.
func applyState(sp gpuSpec, d *gpu.Device) *problem {
	if sp.ClockEvents != nil {
		evs := []gpu.ClockEvent{}
		for _, e := range *sp.ClockEvents {
			if !slices.Contains(clockEventOrder, gpu.ClockEvent(e)) {
				return &problem{"clockEvents", fmt.Sprintf("unknown clock event %q (want one of: %s)", e, joinAny(clockEventOrder))}
			}
			evs = append(evs, gpu.ClockEvent(e))
		}
		d.ClockEvents = evs
	}
	if sp.RecoveryAction != nil {
		if _, ok := recoveryCode(gpu.RecoveryAction(*sp.RecoveryAction)); !ok {
			return &problem{"recoveryAction", fmt.Sprintf("unknown recovery action %q (want one of: %s)", *sp.RecoveryAction, recoveryActions())}
		}
		d.RecoveryAction = gpu.RecoveryAction(*sp.RecoveryAction)
	}
	if f := sp.Fabric; f != nil {
		if f.State != nil && !slices.Contains(states, *f.State) {
			return &problem{"fabric.state", fmt.Sprintf("unknown fabric state %q (want one of: %s)", *f.State, strings.Join(states[1:], ", "))}
		}
		setIf(&d.Fabric.State, f.State)
		setIf(&d.Fabric.Status, f.Status)
		setIf(&d.Fabric.ClusterUUID, f.ClusterUUID)
		setIf(&d.Fabric.CliqueID, f.CliqueID)
	}
	if p := applyNVLinks(sp.NVLinks, d); p != nil {
		return p
	}
	for _, k := range sortedKeys(sp.Errors) {
		if !slices.Contains(knownFields(), gpu.Field(k)) {
			return &problem{"errors." + k, fmt.Sprintf("unknown field %q in errors (want one of: %s)", k, joinAny(knownFields()))}
		}
		e := sp.Errors[k]
		if e.Message == "" {
			e.Message = "simulated read failure"
			if e.NotSupported {
				e.Message = gpu.ErrNotSupported.Error()
			}
		}
		if d.Errors == nil {
			d.Errors = map[gpu.Field]gpu.FieldError{}
		}
		d.Errors[gpu.Field(k)] = gpu.FieldError{NotSupported: e.NotSupported, Message: e.Message}
	}
	return nil
}

func applyNVLinks(n *nvlinkSpec, d *gpu.Device) *problem {
	if n == nil {
		return nil
	}
	if n.Count != nil {
		if *n.Count < 0 || *n.Count > maxLink {
			return &problem{"nvlinks.count", fmt.Sprintf("nvlinks count %d out of range (0-%d)", *n.Count, maxLink)}
		}
		d.NVLinks = nil
		for l := range *n.Count {
			d.NVLinks = append(d.NVLinks, gpu.NVLink{Link: l, Active: true})
		}
		delete(d.Errors, gpu.FieldNVLink)
		if *n.Count == 0 {
			d.SetErr(gpu.FieldNVLink, fmt.Errorf("NVLink: %w", gpu.ErrNotSupported))
		}
	}
	for _, l := range n.Inactive {
		if l < 0 || l >= len(d.NVLinks) {
			return &problem{"nvlinks.inactive", fmt.Sprintf("inactive link %d out of range (the GPU has %d links)", l, len(d.NVLinks))}
		}
		d.NVLinks[l].Active = false
	}
	return nil
}

// knownFields lists every gpu.Field a device can carry an error for.
func knownFields() []gpu.Field {
	return append(slices.Clone(allFields), gpu.FieldUUID, gpu.FieldName, gpu.FieldSerial, gpu.FieldPCI)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func joinAny[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}
