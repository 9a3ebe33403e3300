package rules

import (
	"fmt"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
)

// Memory causes.
const (
	CauseECCUncorrected   = "ecc-uncorrected"
	CauseECCAggregate     = "ecc-uncorrected-aggregate"
	CauseECCCorrected     = "ecc-corrected-limit"
	CauseECCCorrectedRate = "ecc-corrected-rate"
	CauseRowRemapPending  = "row-remap-pending"
	CauseRowRemapFailure  = "row-remap-failure"
	CauseRowRemapRows     = "row-remap-correctable"
	CauseRetiredPending   = "retired-pages-pending"
	CauseRetiredLimit     = "retired-pages-limit"
)

func memory(cause string, s fault.Severity, a fault.Action, msg, evidence string) Outcome {
	return Outcome{Cause: cause, Component: fault.ComponentMemory, Severity: s, Action: a, Message: msg, Evidence: evidence}
}

// eccErrors: uncorrected errors since the last reset (the monitor: when they grow) warn when
// there is one, a contained error the application that hit it restarts from, and fail from
// the second, a containment that does not hold;
// corrected ones above the threshold, or growing faster than the rate, warn; uncorrected
// errors in the GPU's lifetime only are a note (the volatile counter decides).
var eccErrors = Rule{
	Check: "hardware.ecc-errors", Title: "no uncorrected ECC errors",
	Fix:    "one uncorrected ECC error was contained: restart the application that hit it; more than one since the last reset: drain the GPU, reset it, and rerun acceptance; if they recur after the reset, open a hardware ticket",
	Fields: []gpu.Field{gpu.FieldECCErrors},
	Pass: func(in Input) string {
		return fmt.Sprintf("0 uncorrected, %d corrected since reset", in.Device.ECC.VolatileCorrected)
	},
	Judge: func(in Input) []Outcome {
		e := in.Device.ECC
		var was gpu.ECC // zero: counted from the last reset
		havePrev := in.prevOK(gpu.FieldECCErrors)
		if havePrev {
			was = in.Prev.ECC
		}
		var out []Outcome
		if growth(was.VolatileUncorrected, e.VolatileUncorrected) > 0 {
			out = append(out, uncorrected(was, e))
		}
		if e.VolatileCorrected > in.T.MaxCorrectedECC {
			out = append(out, memory(CauseECCCorrected, fault.SeverityWarning, fault.ActionNone,
				fmt.Sprintf("%d corrected ECC errors since the last reset (threshold %d)", e.VolatileCorrected, in.T.MaxCorrectedECC),
				fmt.Sprintf("ecc.volatileCorrected %d", e.VolatileCorrected)))
		}
		if n := growth(was.VolatileCorrected, e.VolatileCorrected); havePrev && in.Interval > 0 && overRate(n, in.T.CorrectedECCPerMinute, in.Interval) {
			out = append(out, memory(CauseECCCorrectedRate, fault.SeverityWarning, fault.ActionNone,
				fmt.Sprintf("%d corrected ECC errors in %s (threshold %d a minute)", n, in.Interval, in.T.CorrectedECCPerMinute),
				fmt.Sprintf("ecc.volatileCorrected %d -> %d in %s", was.VolatileCorrected, e.VolatileCorrected, in.Interval)))
		}
		if growth(was.AggregateUncorrected, e.AggregateUncorrected) > 0 {
			out = append(out, memory(CauseECCAggregate, fault.SeverityInfo, fault.ActionNone,
				fmt.Sprintf("%d uncorrected since reset, %d in the GPU's lifetime", e.VolatileUncorrected, e.AggregateUncorrected),
				fmt.Sprintf("ecc.aggregateUncorrected %d -> %d", was.AggregateUncorrected, e.AggregateUncorrected)))
		}
		return out
	},
}

// rowRemap: a failed remap needs service, a pending one a reset; many correctable remapped
// rows warn.
var rowRemap = Rule{
	Check: "hardware.row-remap", Title: "no pending or failed row remapping",
	Fix:    "pending remap: reset the GPU (no process may be using it) to apply it; remap failure: the GPU needs RMA",
	Fields: []gpu.Field{gpu.FieldRowRemap},
	Pass: func(in Input) string {
		r := in.Device.RowRemap
		return fmt.Sprintf("no pending remap, %d correctable / %d uncorrectable rows remapped", r.Correctable, r.Uncorrectable)
	},
	Judge: func(in Input) []Outcome {
		r := in.Device.RowRemap
		var out []Outcome
		if r.Failure {
			out = append(out, memory(CauseRowRemapFailure, fault.SeverityFatal, fault.ActionService,
				fmt.Sprintf("row remapping FAILED (%d uncorrectable rows): RMA", r.Uncorrectable),
				fmt.Sprintf("rowRemap.failure true, uncorrectable %d", r.Uncorrectable)))
		}
		if r.Pending {
			out = append(out, memory(CauseRowRemapPending, fault.SeverityCritical, fault.ActionResetGPU,
				"row remap pending: GPU reset required",
				fmt.Sprintf("rowRemap.pending true, uncorrectable %d, correctable %d", r.Uncorrectable, r.Correctable)))
		}
		if r.Correctable > in.T.MaxCorrectableRemappedRows {
			out = append(out, memory(CauseRowRemapRows, fault.SeverityWarning, fault.ActionNone,
				fmt.Sprintf("%d correctable remapped rows (threshold %d)", r.Correctable, in.T.MaxCorrectableRemappedRows),
				fmt.Sprintf("rowRemap.correctable %d", r.Correctable)))
		}
		return out
	},
}

// retiredPages: a pending retirement needs a reset; more retired pages than the threshold
// need service (RMA).
var retiredPages = Rule{
	Check: "hardware.retired-pages", Title: "retired pages within limits",
	Fix:    "pending retirement: reset the GPU; too many retired pages: open a hardware ticket (RMA)",
	Fields: []gpu.Field{gpu.FieldRetiredPages},
	Pass: func(in Input) string {
		return fmt.Sprintf("%d retired pages, none pending", in.Device.RetiredPages.SingleBit+in.Device.RetiredPages.DoubleBit)
	},
	Judge: func(in Input) []Outcome {
		r := in.Device.RetiredPages
		total := r.SingleBit + r.DoubleBit
		var out []Outcome
		if r.Pending {
			out = append(out, memory(CauseRetiredPending, fault.SeverityCritical, fault.ActionResetGPU,
				"page retirement pending: GPU reset required",
				fmt.Sprintf("retiredPages.pending true, singleBit %d, doubleBit %d", r.SingleBit, r.DoubleBit)))
		}
		if total > in.T.MaxRetiredPages {
			out = append(out, memory(CauseRetiredLimit, fault.SeverityCritical, fault.ActionService,
				fmt.Sprintf("%d retired pages (threshold %d): the GPU needs service (RMA)", total, in.T.MaxRetiredPages),
				fmt.Sprintf("retiredPages singleBit %d, doubleBit %d", r.SingleBit, r.DoubleBit)))
		}
		return out
	},
}

// uncorrected judges the uncorrected errors since the last reset. One is an error the GPU
// contained (XID 94): the application that hit it is restarted and the GPU stays in
// service. Two or more mean the containment is not holding: the GPU needs a reset (which
// also applies a pending row remap). An uncontained error needs a reset at once: its XID
// (95, 48) says so, and so does the pending remap or retirement it leaves.
func uncorrected(was, e gpu.ECC) Outcome {
	ev := fmt.Sprintf("ecc.volatileUncorrected %d -> %d", was.VolatileUncorrected, e.VolatileUncorrected)
	if e.VolatileUncorrected <= 1 {
		return memory(CauseECCUncorrected, fault.SeverityWarning, fault.ActionRestartApp,
			fmt.Sprintf("1 uncorrected ECC error since the last reset (%d lifetime): contained, restart the application that hit it", e.AggregateUncorrected), ev)
	}
	return memory(CauseECCUncorrected, fault.SeverityCritical, fault.ActionResetGPU,
		fmt.Sprintf("%d uncorrected ECC errors since the last reset (%d lifetime): reset the GPU", e.VolatileUncorrected, e.AggregateUncorrected), ev)
}
