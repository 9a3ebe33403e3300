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
		{ID: "hardware.ecc-errors", Layer: LayerHardware, Title: "no uncorrected ECC errors",
			Fix: "uncorrected ECC errors: drain the GPU, reset it, and rerun acceptance; if they recur, open a hardware ticket",
			Run: checkECCErrors},
		{ID: "hardware.row-remap", Layer: LayerHardware, Title: "no pending or failed row remapping",
			Fix: "pending remap: reset the GPU (no process may be using it) to apply it; remap failure: the GPU needs RMA",
			Run: checkRowRemap},
		{ID: "hardware.retired-pages", Layer: LayerHardware, Title: "retired pages within limits",
			Fix: "pending retirement: reset the GPU; too many retired pages: open a hardware ticket (RMA)",
			Run: checkRetiredPages},
		{ID: "hardware.temperature", Layer: LayerHardware, Title: "temperature below the slowdown threshold",
			Fix: "check airflow, fans, inlet temperature and the data-centre cooling for this rack",
			Run: checkTemperature},
		{ID: "hardware.power", Layer: LayerHardware, Title: "power draw and limit",
			Fix: "restore the default power limit (`nvidia-smi -pl`) or fix the policy; an idle GPU near its limit is faulty",
			Run: checkPower},
		{ID: "hardware.clock-events", Layer: LayerHardware, Title: "no thermal or power slowdown",
			Fix: "hardware slowdown means overheating or a power-brake signal: check cooling and the PSU/power-brake cabling",
			Run: checkClockEvents},
		{ID: "hardware.pcie-replays", Layer: LayerHardware, Title: "PCIe replay count",
			Fix: "many PCIe replays mean a marginal link: reseat the GPU or riser; open a hardware ticket if it continues",
			Run: checkPCIeReplays},
		{ID: "hardware.recovery-action", Layer: LayerHardware, Title: "driver's recovery action is none",
			Fix: "do what the driver asks (reset the GPU, reboot the node, or drain peer-to-peer work), then rerun acceptance",
			Run: checkRecoveryAction},
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
		if e := unreachable(d); e != nil {
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
			return gpuVerdict{StatusWarn, fmt.Sprintf("ECC %s, %s after the next reset", enabledWord(d.ECC.Enabled), enabledWord(d.ECC.PendingEnabled))}
		case want && !d.ECC.Enabled:
			return gpuVerdict{StatusFail, "ECC disabled"}
		}
		return gpuVerdict{StatusPass, "ECC " + enabledWord(d.ECC.Enabled)}
	})
}

func checkECCErrors(f *Facts, p *Policy) Verdict {
	return perGPU(f, []gpu.Field{gpu.FieldECCErrors}, func(d *gpu.Device) gpuVerdict {
		e := d.ECC
		switch {
		case e.VolatileUncorrected > 0:
			return gpuVerdict{StatusFail, fmt.Sprintf("%d uncorrected ECC errors since the last reset (%d lifetime)", e.VolatileUncorrected, e.AggregateUncorrected)}
		case e.VolatileCorrected > p.Thresholds.MaxCorrectedECC:
			return gpuVerdict{StatusWarn, fmt.Sprintf("%d corrected ECC errors since the last reset (threshold %d)", e.VolatileCorrected, p.Thresholds.MaxCorrectedECC)}
		case e.AggregateUncorrected > 0:
			return gpuVerdict{StatusWarn, fmt.Sprintf("0 uncorrected since reset, %d in the GPU's lifetime", e.AggregateUncorrected)}
		}
		return gpuVerdict{StatusPass, fmt.Sprintf("0 uncorrected, %d corrected since reset", e.VolatileCorrected)}
	})
}

func checkRowRemap(f *Facts, p *Policy) Verdict {
	return perGPU(f, []gpu.Field{gpu.FieldRowRemap}, func(d *gpu.Device) gpuVerdict {
		r := d.RowRemap
		switch {
		case r.Failure:
			return gpuVerdict{StatusFail, fmt.Sprintf("row remapping FAILED (%d uncorrectable rows): RMA", r.Uncorrectable)}
		case r.Pending:
			return gpuVerdict{StatusFail, "row remap pending: GPU reset required"}
		case r.Correctable > p.Thresholds.MaxCorrectableRemappedRows:
			return gpuVerdict{StatusWarn, fmt.Sprintf("%d correctable remapped rows (threshold %d)", r.Correctable, p.Thresholds.MaxCorrectableRemappedRows)}
		}
		return gpuVerdict{StatusPass, fmt.Sprintf("no pending remap, %d correctable / %d uncorrectable rows remapped", r.Correctable, r.Uncorrectable)}
	})
}

func checkRetiredPages(f *Facts, p *Policy) Verdict {
	return perGPU(f, []gpu.Field{gpu.FieldRetiredPages}, func(d *gpu.Device) gpuVerdict {
		r := d.RetiredPages
		total := r.SingleBit + r.DoubleBit
		switch {
		case r.Pending:
			return gpuVerdict{StatusFail, "page retirement pending: GPU reset required"}
		case total > p.Thresholds.MaxRetiredPages:
			return gpuVerdict{StatusFail, fmt.Sprintf("%d retired pages (threshold %d)", total, p.Thresholds.MaxRetiredPages)}
		}
		return gpuVerdict{StatusPass, fmt.Sprintf("%d retired pages, none pending", total)}
	})
}

func checkTemperature(f *Facts, p *Policy) Verdict {
	return perGPU(f, []gpu.Field{gpu.FieldTemperature}, func(d *gpu.Device) gpuVerdict {
		limit := p.Thresholds.MaxTemperatureC
		src := "policy"
		if limit == 0 {
			if d.Thermal.SlowdownC == 0 {
				return gpuVerdict{StatusPass, fmt.Sprintf("%d °C (no slowdown threshold reported)", d.Thermal.GPUC)}
			}
			limit, src = d.Thermal.SlowdownC-5, fmt.Sprintf("slowdown %d °C - 5", d.Thermal.SlowdownC)
		}
		if d.Thermal.GPUC >= limit {
			return gpuVerdict{StatusFail, fmt.Sprintf("%d °C, at or above %d °C (%s)", d.Thermal.GPUC, limit, src)}
		}
		return gpuVerdict{StatusPass, fmt.Sprintf("%d °C, below %d °C", d.Thermal.GPUC, limit)}
	})
}

func checkPower(f *Facts, p *Policy) Verdict {
	return perGPU(f, []gpu.Field{gpu.FieldPower}, func(d *gpu.Device) gpuVerdict {
		w := d.Power
		if w.LimitW <= 0 {
			return gpuVerdict{StatusSkip, "no power limit reported"}
		}
		pct := int(100 * w.DrawW / w.LimitW)
		switch {
		case pct > p.Thresholds.MaxPowerPercent:
			return gpuVerdict{StatusWarn, fmt.Sprintf("%.0f W of %.0f W (%d%%, threshold %d%%)", w.DrawW, w.LimitW, pct, p.Thresholds.MaxPowerPercent)}
		case w.DefaultLimitW > 0 && w.LimitW < w.DefaultLimitW:
			return gpuVerdict{StatusWarn, fmt.Sprintf("power limit %.0f W below the default %.0f W", w.LimitW, w.DefaultLimitW)}
		}
		return gpuVerdict{StatusPass, fmt.Sprintf("%.0f W of %.0f W", w.DrawW, w.LimitW)}
	})
}

func checkClockEvents(f *Facts, _ *Policy) Verdict {
	return perGPU(f, []gpu.Field{gpu.FieldClockEvents}, func(d *gpu.Device) gpuVerdict {
		var bad []string
		for _, c := range d.ClockEvents {
			if !c.Benign() {
				bad = append(bad, string(c))
			}
		}
		if len(bad) > 0 {
			return gpuVerdict{StatusFail, "clocks reduced by " + strings.Join(bad, ", ")}
		}
		return gpuVerdict{StatusPass, "no thermal or power slowdown"}
	})
}

func checkPCIeReplays(f *Facts, p *Policy) Verdict {
	return perGPU(f, []gpu.Field{gpu.FieldPCIeReplay}, func(d *gpu.Device) gpuVerdict {
		if n := d.PCI.ReplayCounter; n > p.Thresholds.MaxPCIeReplays {
			return gpuVerdict{StatusWarn, fmt.Sprintf("%d PCIe replays since driver load (threshold %d)", n, p.Thresholds.MaxPCIeReplays)}
		}
		return gpuVerdict{StatusPass, fmt.Sprintf("%d PCIe replays", d.PCI.ReplayCounter)}
	})
}

func checkRecoveryAction(f *Facts, _ *Policy) Verdict {
	return perGPU(f, []gpu.Field{gpu.FieldRecoveryAction}, func(d *gpu.Device) gpuVerdict {
		if d.RecoveryAction != gpu.RecoveryNone && d.RecoveryAction != "" {
			return gpuVerdict{StatusFail, fmt.Sprintf("driver asks for %s", d.RecoveryAction)}
		}
		return gpuVerdict{StatusPass, "none"}
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
