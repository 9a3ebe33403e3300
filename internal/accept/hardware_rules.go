package accept

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/rules"
)

// StatusOf is the acceptance status of a rule outcome's level (rules.Level): fail for
// Fail, warn for Warn, pass otherwise. The health monitor maps the same level to
// unhealthy, degraded and healthy.
func StatusOf(l rules.Level) Status {
	switch l {
	case rules.Fail:
		return StatusFail
	case rules.Warn:
		return StatusWarn
	}
	return StatusPass
}

// ruleCheck is the acceptance check of one rule of the rule set (internal/rules): the
// rule judges every GPU under the policy's thresholds.
func ruleCheck(id string) Check {
	r, ok := rules.ByCheck(id)
	if !ok {
		panic("accept: no rule for check " + id) // a programming error, caught by every test
	}
	return Check{ID: r.Check, Layer: LayerHardware, Title: r.Title, Fix: r.Fix, Run: func(f *Facts, p *Policy) Verdict {
		return perGPU(f, r.Fields, func(d *gpu.Device) gpuVerdict { return judge(r, d, p) })
	}}
}

// judge folds a rule's outcomes on one GPU into its verdict: the worst level decides, and
// the message is that level's outcomes' (each distinct one once), or the rule's own when
// nothing is wrong.
func judge(r rules.Rule, d *gpu.Device, p *Policy) gpuVerdict {
	if r.Skip != nil {
		if why := r.Skip(d); why != "" {
			return gpuVerdict{StatusSkip, why, ""}
		}
	}
	in := rules.Input{Device: d, T: &p.Thresholds}
	outs := r.Judge(in)
	worst := rules.OK
	for _, o := range outs {
		worst = max(worst, o.Level())
	}
	if worst == rules.OK {
		return gpuVerdict{StatusPass, r.Pass(in), ""}
	}
	var msgs, fixes []string
	for _, o := range outs {
		if o.Level() != worst {
			continue
		}
		if !contains(msgs, o.Message) {
			msgs = append(msgs, o.Message)
		}
		if fix := rules.Fix(o.Cause, o.Action, d.UUID); fix != "" && !contains(fixes, fix) {
			fixes = append(fixes, fix)
		}
	}
	return gpuVerdict{StatusOf(worst), strings.Join(msgs, "; "), strings.Join(fixes, "; ")}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// expectLink is the policy's minimum PCIe link, an expectation of the accelerator class
// that acceptance adds to the rule (the rule judges the link against its own maximum).
func expectLink(d *gpu.Device, p *Policy) *gpuVerdict {
	l := d.PCI
	cur := fmt.Sprintf("gen%d x%d", l.LinkGen, l.LinkWidth)
	switch {
	case p.Expect.PCIeWidth > 0 && l.LinkWidth < p.Expect.PCIeWidth:
		return &gpuVerdict{StatusFail, fmt.Sprintf("%s, width below x%d", cur, p.Expect.PCIeWidth), rules.Fix(rules.CausePCIeLinkWidth, "", d.UUID)}
	case p.Expect.PCIeGen > 0 && l.LinkGen < p.Expect.PCIeGen:
		return &gpuVerdict{StatusWarn, fmt.Sprintf("%s, generation below gen%d (an idle GPU may downtrain: recheck under load)", cur, p.Expect.PCIeGen),
			"rerun acceptance while the GPU is busy; a busy GPU below the generation is a BIOS setting or riser fault"}
	case l.LinkGenMaxDevice > 0 && l.LinkGenMaxDevice > l.LinkGenMax:
		return &gpuVerdict{StatusWarn, fmt.Sprintf("%s; the slot limits the GPU (gen%d capable) to gen%d", cur, l.LinkGenMaxDevice, l.LinkGenMax),
			"nothing is wrong with the GPU: the slot or the BIOS caps the link; move it to a faster slot, raise the BIOS PCIe generation, or accept the slower link in the policy (expect.pcieGen)"}
	}
	return nil
}

func checkPCIeLink(f *Facts, p *Policy) Verdict {
	r, _ := rules.ByCheck("hardware.pcie-link")
	return perGPU(f, r.Fields, func(d *gpu.Device) gpuVerdict {
		v := judge(r, d, p)
		if e := expectLink(d, p); e != nil && Worse(v.status, e.status) != v.status {
			return *e
		}
		return v
	})
}

// checkNVLink is the rule's verdict (every reported link active) worded as a count of
// links, or, when the policy sets nvlinksPerGPU, the count of active links against it.
func checkNVLink(f *Facts, p *Policy) Verdict {
	r, _ := rules.ByCheck("hardware.nvlink")
	return perGPU(f, nil, func(d *gpu.Device) gpuVerdict {
		want := p.Expect.NVLinksPerGPU
		if e := d.Err(gpu.FieldNVLink); e != nil {
			switch {
			case !e.NotSupported:
				return gpuVerdict{StatusFail, "cannot read NVLink state: " + e.Message, ""}
			case want > 0:
				return gpuVerdict{StatusFail, fmt.Sprintf("no NVLink (%s), %d links expected", e.Message, want), ""}
			}
			return gpuVerdict{StatusSkip, "GPU has no NVLink (" + e.Message + ")", ""}
		}
		if len(d.NVLinks) == 0 {
			if want > 0 {
				return gpuVerdict{StatusFail, fmt.Sprintf("no NVLinks reported, %d expected", want), ""}
			}
			return gpuVerdict{StatusSkip, "GPU reports no NVLinks", ""}
		}
		// The rule decides every reported link's state; the policy's count, when it sets
		// one, is an expectation of the class that acceptance adds.
		v := gpuVerdict{StatusPass, "", ""}
		if want == 0 {
			v, want = judge(r, d, p), len(d.NVLinks)
		}
		active := 0
		var down []string
		for _, l := range d.NVLinks {
			if l.Active {
				active++
			} else {
				down = append(down, fmt.Sprint(l.Link))
			}
		}
		if active < want || v.status != StatusPass {
			return gpuVerdict{StatusFail, fmt.Sprintf("%d/%d links active, %d expected (down: %s)", active, len(d.NVLinks), want, strings.Join(down, ",")),
				rules.Fix(rules.NVLinkDownCause(0), "", d.UUID)}
		}
		return gpuVerdict{StatusPass, fmt.Sprintf("%d/%d links active", active, len(d.NVLinks)), ""}
	})
}

// checkFabric is the rule's verdict, with the policy's expectation: "ignore" skips the
// check, "required" fails a GPU without a fabric.
func checkFabric(f *Facts, p *Policy) Verdict {
	if p.Expect.Fabric == "ignore" {
		return skip("the policy ignores the fabric (expect.fabric: ignore)")
	}
	r, _ := rules.ByCheck("hardware.fabric")
	return perGPU(f, nil, func(d *gpu.Device) gpuVerdict {
		if !rules.HasFabric(d) {
			if p.Expect.Fabric == "required" {
				return gpuVerdict{StatusFail, "GPU has no NVSwitch fabric, the policy requires one", ""}
			}
			return gpuVerdict{StatusSkip, "GPU has no NVSwitch fabric (not supported)", ""}
		}
		if e := d.Err(gpu.FieldFabric); e != nil {
			return gpuVerdict{StatusFail, "cannot read fabric state: " + e.Message, ""}
		}
		return judge(r, d, p)
	})
}
