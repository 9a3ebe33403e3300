package xid

import (
	"fmt"
	"slices"
)

// Rule is a decoding or correlation rule gpunode applies to an XID beyond its catalog row.
type Rule struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// ruleDef is a rule and the XIDs it concerns.
type ruleDef struct {
	xids []int
	rule func(Options) Rule
}

var ruleDefs = []ruleDef{
	{[]int{45}, func(o Options) Rule {
		return Rule{"consequence", fmt.Sprintf("A 45 within %s after another XID on the same GPU (94, 95 or 48 first), "+
			"or whose text says \"caused by previous Xid N\", is that XID's consequence: info, no action, no new fault. "+
			"Alone it is a warning: restart the fabric manager on NVSwitch systems.", short(o.ConsequenceWindow))}
	}},
	{[]int{48, 94, 95}, func(o Options) Rule {
		return Rule{"consequence", fmt.Sprintf("A 45 on the same GPU within %s after it is its consequence, not a new fault.", short(o.ConsequenceWindow))}
	}},
	{[]int{94}, func(o Options) Rule {
		return Rule{"repeat", fmt.Sprintf("A contained error restarts the application that hit it; the GPU stays in service. A 94 on "+
			"the same GPU in a second incident (another process, or after a pause of more than %s) within %s means the containment "+
			"is not holding: critical, reset the GPU. An uncontained error (95) is a reset at once.", short(o.BurstGap), short(o.RepeatWindow))}
	}},
	{[]int{48, 63, 64}, func(o Options) Rule {
		return Rule{"drain-then-reset", fmt.Sprintf("48 together with 63 or 64 on the same GPU (within %s): drain "+
			"(let running work finish, schedule none), then reset the GPU; a 64 still means service.", short(o.PairWindow))}
	}},
	{[]int{13}, func(o Options) Rule {
		return Rule{"repeat", fmt.Sprintf("A 13 on the same GPU and GPC/TPC in a second incident (another process, or after a "+
			"pause of more than %s) within %s escalates to critical: run diagnostics (gpunode resets the GPU and runs acceptance).",
			short(o.BurstGap), short(o.RepeatWindow))}
	}},
	{[]int{31}, func(o Options) Rule {
		return Rule{"repeat", fmt.Sprintf("A 31 on the same GPU in a second incident (another process, or after a pause of "+
			"more than %s) within %s escalates to critical: run diagnostics (gpunode resets the GPU and runs acceptance).",
			short(o.BurstGap), short(o.RepeatWindow))}
	}},
	{[]int{74}, func(Options) Rule {
		return Rule{"nvlink-registers", "The link number and the seven register words are decoded; each set bit is " +
			"explained from the catalog's WORKFLOW_NVLINK_ERR (Hopper layout). Fatal: reset. Non-fatal with only " +
			"ignorable or ECC-threshold bits: warning. The remote end of the link may be at fault."}
	}},
	{[]int{136}, func(Options) Rule {
		return Rule{"link", "The link that failed training and the register words are decoded from the text."}
	}},
	{[]int{144, 145, 146, 147, 148, 149, 150, 155}, func(Options) Rule {
		return Rule{"nvlink5", "The unit, Fatal/Nonfatal, the XC and injected flags and the link are read from the text; " +
			"intrInfo and errorStatus are kept raw. Fatal: reset (a link-fatal NETIR_LINK unit of 149: drain, then reset); " +
			"Nonfatal: warning, no action unless the driver raises XID 154."}
	}},
	{[]int{154}, func(Options) Rule {
		return Rule{"recovery-action", "The new action in \"GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset " +
			"Required)\" decides: None: info; GPU Reset Required: reset; Node Reboot Required: reboot; Drain P2P: drain-p2p; " +
			"Drain and Reset: drain, then reset."}
	}},
	{[]int{79}, func(Options) Rule {
		return Rule{"fallen-off-the-bus", "Also recognised without an Xid prefix (\"NVRM: GPU 0000:2b:00.0: GPU has fallen " +
			"off the bus.\", the legacy \"GPU at ... has fallen off the bus.\" and the three-line probe-time message); " +
			"those events are marked derived."}
	}},
}

// RulesFor lists the rules gpunode applies to an XID beyond its catalog row (with the
// windows of o; zero fields take the defaults).
func RulesFor(code int, o Options) []Rule {
	o = o.withDefaults()
	var out []Rule
	for _, d := range ruleDefs {
		if slices.Contains(d.xids, code) {
			out = append(out, d.rule(o))
		}
	}
	return out
}
