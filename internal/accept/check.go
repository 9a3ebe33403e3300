package accept

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
)

// Check is one acceptance check: a pure function of (facts, policy).
type Check struct {
	ID    string
	Layer Layer
	Title string
	// Fix is shown when the check does not pass.
	Fix string
	Run func(f *Facts, p *Policy) Verdict
}

// Verdict is what a check's function returns; the runner adds identity and fix.
type Verdict struct {
	Status   Status
	Message  string
	Evidence []string
	GPUs     []GPUResult
	// Measurements: what a performance check measured, against what baseline.
	Measurements []Measurement
	// Fix, when set, is the fix of what this verdict found (the fixes of the failing and
	// warning GPUs' causes), in place of the check's own.
	Fix string
}

func pass(msg string, args ...any) Verdict {
	return Verdict{Status: StatusPass, Message: fmt.Sprintf(msg, args...)}
}
func warn(msg string, args ...any) Verdict {
	return Verdict{Status: StatusWarn, Message: fmt.Sprintf(msg, args...)}
}
func fail(msg string, args ...any) Verdict {
	return Verdict{Status: StatusFail, Message: fmt.Sprintf(msg, args...)}
}
func skip(msg string, args ...any) Verdict {
	return Verdict{Status: StatusSkip, Message: fmt.Sprintf(msg, args...)}
}

// gpuVerdict is a per-GPU outcome inside a check.
type gpuVerdict struct {
	status Status
	msg    string
	// fix is the fix of the GPU's cause when the check has more than one ("" = the check's).
	fix string
}

// perGPU runs fn on every GPU whose needed fields are readable and folds the outcomes into
// one verdict. A GPU whose field is not supported skips (with the driver's words); one
// whose field could not be read fails with the error text.
func perGPU(f *Facts, fields []gpu.Field, fn func(d *gpu.Device) gpuVerdict) Verdict {
	if v, ok := needGPUs(f); !ok {
		return v
	}
	out := Verdict{Status: StatusPass}
	var passMsgs []string
	var fixes []string
	allSkip := true
	for i := range f.GPU.Devices {
		d := &f.GPU.Devices[i]
		gv := fieldGate(d, fields)
		if gv == nil {
			r := fn(d)
			gv = &r
		}
		if gv.status != StatusSkip {
			allSkip = false
		}
		line := fmt.Sprintf("GPU %d (%s): %s", d.Index, d.UUID, gv.msg)
		out.Evidence = append(out.Evidence, line)
		out.GPUs = append(out.GPUs, GPUResultOf(d, gv.status, gv.msg))
		switch gv.status {
		case StatusPass:
			passMsgs = append(passMsgs, gv.msg)
		case StatusSkip:
		default:
			if gv.fix != "" && !contains(fixes, gv.fix) {
				fixes = append(fixes, gv.fix)
			}
		}
		if gv.status != StatusSkip {
			out.Status = Worse(out.Status, gv.status)
		}
	}
	n := len(f.GPU.Devices)
	switch {
	case allSkip:
		out.Status = StatusSkip
		out.Message = strings.TrimPrefix(out.Evidence[0], fmt.Sprintf("GPU %d (%s): ", f.GPU.Devices[0].Index, f.GPU.Devices[0].UUID))
		if n > 1 {
			out.Message = fmt.Sprintf("%s (%s)", out.Message, allOf(n, "GPU"))
		}
	case out.Status == StatusPass || out.Status == StatusSkip:
		out.Message = fmt.Sprintf("%d/%d GPUs: %s", len(passMsgs), n, summarize(passMsgs))
	default:
		out.Message = BadGPUs(out.GPUs)
	}
	out.Fix = strings.Join(fixes, "; ")
	return out
}

// BadGPUs says which GPUs of a per-GPU check failed and which warned, each under its own
// status: one GPU with its message ("GPU 3: gen4 x8, width below x16"), more by name
// ("GPU 1, GPU 3 fail; GPU 6 warns"), every one of them (the per-GPU rows say why).
func BadGPUs(gpus []GPUResult) string {
	var fails, warns []string
	var only GPUResult
	for _, g := range gpus {
		switch g.Status {
		case StatusFail:
			fails = append(fails, fmt.Sprintf("GPU %d", g.Index))
		case StatusWarn:
			warns = append(warns, fmt.Sprintf("GPU %d", g.Index))
		default:
			continue
		}
		only = g
	}
	switch {
	case len(fails)+len(warns) == 0:
		return ""
	case len(fails)+len(warns) == 1:
		return fmt.Sprintf("GPU %d: %s", only.Index, only.Message)
	}
	var parts []string
	if len(fails) > 0 {
		parts = append(parts, strings.Join(fails, ", ")+" "+verb(len(fails), "fails", "fail"))
	}
	if len(warns) > 0 {
		parts = append(parts, strings.Join(warns, ", ")+" "+verb(len(warns), "warns", "warn"))
	}
	return strings.Join(parts, "; ")
}

func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// fieldGate returns a verdict when one of the fields cannot be used.
func fieldGate(d *gpu.Device, fields []gpu.Field) *gpuVerdict {
	if e := d.Unreachable(); e != nil {
		// One check (hardware.gpu-responding) fails for a GPU that does not answer; the
		// others skip it rather than repeat the same failure.
		return &gpuVerdict{status: StatusSkip, msg: "GPU not answering (see hardware.gpu-responding): " + e.Message}
	}
	for _, fld := range fields {
		if e := d.Err(fld); e != nil {
			if e.NotSupported {
				return &gpuVerdict{status: StatusSkip, msg: fmt.Sprintf("%s not supported on this GPU/driver (%s)", fld, e.Message)}
			}
			return &gpuVerdict{status: StatusFail, msg: fmt.Sprintf("cannot read %s: %s", fld, e.Message)}
		}
	}
	return nil
}

// summarize returns the common message when every GPU said the same, else the first.
func summarize(msgs []string) string {
	if len(msgs) == 0 {
		return ""
	}
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			return msgs[0] + " (values differ per GPU: see evidence)"
		}
	}
	return msgs[0]
}

func needGPUs(f *Facts) (Verdict, bool) {
	if f.GPUErr != nil {
		return skip("no GPU facts: %v", f.GPUErr), false
	}
	if f.GPU == nil || len(f.GPU.Devices) == 0 {
		return skip("no GPUs found"), false
	}
	return Verdict{}, true
}
