package accept

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/xid"
)

func hardwareHealthChecks() []Check {
	return []Check{
		{ID: "hardware.gpu-responding", Layer: LayerHardware, Title: "every GPU answers",
			Fix: "a GPU that does not answer has fallen off the bus or hung: capture `dmesg`, then reset the GPU or reboot the node",
			Run: checkResponding},
		{ID: "hardware.ecc-mode", Layer: LayerHardware, Title: "ECC enabled",
			Fix: "enable ECC with `nvidia-smi -e 1` and reset the GPU",
			Run: checkECCMode},
		ruleCheck("hardware.ecc-errors"),
		ruleCheck("hardware.row-remap"),
		ruleCheck("hardware.retired-pages"),
		ruleCheck("hardware.temperature"),
		ruleCheck("hardware.power"),
		ruleCheck("hardware.clock-events"),
		ruleCheck("hardware.pcie-replays"),
		ruleCheck("hardware.recovery-action"),
		{ID: "hardware.xid-since-boot", Layer: LayerHardware, Title: "no hardware XID errors since boot",
			Fix: "read the XID lines in the evidence and follow the action NVIDIA's XID catalog gives for each (reset the GPU, reboot the node, or service) before accepting the node",
			Run: checkXIDs},
	}
}

func checkResponding(f *Facts, _ *Policy) Verdict {
	if v, ok := needGPUs(f); !ok {
		return v
	}
	out := Verdict{Status: StatusPass}
	var lost []string
	for i := range f.GPU.Devices {
		d := &f.GPU.Devices[i]
		if e := d.Unreachable(); e != nil {
			lost = append(lost, fmt.Sprintf("GPU %d: %s", d.Index, e.Message))
			out.Evidence = append(out.Evidence, fmt.Sprintf("GPU %d (%s): not answering: %s", d.Index, d.UUID, e.Message))
			out.GPUs = append(out.GPUs, GPUResult{Index: d.Index, UUID: d.UUID, Status: StatusFail, Message: "not answering: " + e.Message})
			continue
		}
		out.Evidence = append(out.Evidence, fmt.Sprintf("GPU %d (%s): answering", d.Index, d.UUID))
		out.GPUs = append(out.GPUs, GPUResult{Index: d.Index, UUID: d.UUID, Status: StatusPass, Message: "answering"})
	}
	if len(lost) > 0 {
		out.Status = StatusFail
		out.Message = fmt.Sprintf("%d of %d GPUs not answering: %s", len(lost), len(f.GPU.Devices), strings.Join(lost, "; "))
		return out
	}
	out.Message = fmt.Sprintf("%s answering", allOf(len(f.GPU.Devices), "GPU"))
	return out
}

func checkECCMode(f *Facts, p *Policy) Verdict {
	want := p.Expect.ECC == nil || *p.Expect.ECC
	return perGPU(f, []gpu.Field{gpu.FieldECCMode}, func(d *gpu.Device) gpuVerdict {
		switch {
		case d.ECC.PendingEnabled != d.ECC.Enabled:
			return gpuVerdict{StatusWarn, fmt.Sprintf("ECC %s, %s after the next reset", enabledWord(d.ECC.Enabled), enabledWord(d.ECC.PendingEnabled)), ""}
		case want && !d.ECC.Enabled:
			return gpuVerdict{StatusFail, "ECC disabled", ""}
		}
		return gpuVerdict{StatusPass, "ECC " + enabledWord(d.ECC.Enabled), ""}
	})
}

func checkXIDs(f *Facts, p *Policy) Verdict {
	if f.KernelLogErr != nil {
		return skip("kernel log not readable: %v", f.KernelLogErr)
	}
	byGPU := map[string]string{}
	devByPCI := map[string]*gpu.Device{}
	if f.GPU != nil {
		for i, d := range f.GPU.Devices {
			byGPU[xid.NormalizeBusID(d.PCI.BusID)] = fmt.Sprintf("GPU %d", d.Index)
			devByPCI[xid.NormalizeBusID(d.PCI.BusID)] = &f.GPU.Devices[i]
		}
	}
	perGPU := map[int]*GPUResult{}
	var order []int
	v := Verdict{Status: StatusPass}
	counts := map[int]int{}
	events := xid.Dedupe(f.XIDs)
	for _, e := range events {
		counts[e.XID]++
		where := byGPU[e.PCI]
		if where == "" {
			where = "PCI " + e.PCI
		}
		if len(v.Evidence) < 20 {
			v.Evidence = append(v.Evidence, fmt.Sprintf("%s: XID %d: %s", where, e.XID, e.Message))
		}
		st := StatusWarn
		if !slices.Contains(p.Thresholds.IgnoreXIDs, e.XID) {
			st = StatusFail
		}
		v.Status = Worse(v.Status, st)
		if d := devByPCI[e.PCI]; d != nil {
			g := perGPU[d.Index]
			if g == nil {
				g = &GPUResult{Index: d.Index, UUID: d.UUID, Status: st}
				perGPU[d.Index] = g
				order = append(order, d.Index)
			} else {
				g.Message += ", "
			}
			g.Status = Worse(g.Status, st)
			g.Message += fmt.Sprintf("XID %d", e.XID)
		}
	}
	slices.Sort(order)
	for _, i := range order {
		v.GPUs = append(v.GPUs, *perGPU[i])
	}
	for i, c := range f.ClearedXIDs {
		if i == 4 {
			v.Evidence = append(v.Evidence, fmt.Sprintf("... and %d more cleared by recovery steps", len(f.ClearedXIDs)-i))
			break
		}
		v.Evidence = append(v.Evidence, fmt.Sprintf("not counted: XID %d on PCI %s, cleared by %s", c.Event.XID, c.Event.PCI, c.By))
	}
	if len(events) == 0 {
		v.Message = "no XID errors in the kernel log since boot"
		if n := len(f.ClearedXIDs); n > 0 {
			v.Message = fmt.Sprintf("no XID errors in the kernel log since boot but %d cleared by a recovery step since", n)
		}
		return v
	}
	var parts []string
	keys := make([]int, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("XID %d ×%d", k, counts[k]))
	}
	v.Message = fmt.Sprintf("%s since boot: %s", plural(len(events), "XID event"), strings.Join(parts, ", "))
	if v.Status == StatusWarn {
		v.Message += " (application-level only)"
	}
	return v
}
