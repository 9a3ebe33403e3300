package acceptance

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// A node serves its GPUs (nvidia.com/gpu) through one API, the device plugin or DRA,
// never both; the node label gpunode.dev/gpu-api picks it. A switch from one to the other
// is carried out under a hold of its own, so no pod lands on the node while the agent
// changes over and the node is accepted again before it takes work.
const (
	// HoldOwnerGPUAPI owns the hold of a node whose GPU API is switching; its reason is
	// HoldReasonGPUAPISwitch.
	HoldOwnerGPUAPI        = v1alpha1.HoldOwnerGPUAPI
	HoldReasonGPUAPISwitch = "GPUAPISwitch"
	// ConditionGPUAPI is the GPUNode condition of the switch: True once the node was
	// accepted serving through the API its reason names (ReasonServedByDRA,
	// ReasonServedByDevicePlugin), False (reason GPUAPISwitch) while it switches.
	ConditionGPUAPI            = "GPUAPI"
	ReasonServedByDRA          = "ServedByDRA"
	ReasonServedByDevicePlugin = "ServedByDevicePlugin"
)

// SwitchFacts is what the decision on a node's GPU API reads.
type SwitchFacts struct {
	// Label is the node's gpunode.dev/gpu-api label ("" when absent); Reported the API the
	// agent reports in status.gpuAPI ("" when it reports none).
	Label, Reported string
	// Settled is the API the node was last accepted on (from condition GPUAPI; "" never).
	Settled string
	// Held: the node carries the switch's hold, since HeldSince.
	Held      bool
	HeldSince time.Time
	// Outstanding: an acceptance request waits for its answer; Answered is when the
	// latest answer was given (zero: none), Generation the generation it answered.
	Outstanding bool
	Answered    time.Time
	Generation  int64
}

// SwitchDecision is what to do about the node's GPU API.
type SwitchDecision struct {
	// Hold: place (or keep) the switch's hold; Release: remove it.
	Hold, Release bool
	// RequestAcceptance: ask for an acceptance run of the node on its new API.
	RequestAcceptance bool
	// Condition is condition GPUAPI's status, reason and message ("" reason: none).
	Status          metav1.ConditionStatus
	Reason, Message string
}

// DecideGPUAPISwitch decides a node's GPU API switch. The target is the label (no label:
// the API the agent runs). An agent that reports no API is never held for it. A node the
// controller sees for the first time settles on the API its agent runs. A switch starts
// when the agent runs another API than the target (waiting for it to change over) or than
// the one the node was accepted on (it changed over already): the node is held; once the
// agent reports the target an acceptance run is asked for, and its answer (given after the
// hold was placed) releases the hold: a failed run keeps the node held by acceptance.
func DecideGPUAPISwitch(f SwitchFacts) SwitchDecision {
	target := f.Label
	if target != v1alpha1.GPUAPIDRA && target != v1alpha1.GPUAPIDevicePlugin {
		target = f.Reported
	}
	switch {
	case f.Reported == "":
		return SwitchDecision{Release: f.Held}
	case !f.Held && f.Settled == "" && target == f.Reported, !f.Held && f.Settled == f.Reported && target == f.Reported:
		return served(f.Reported, "the node serves nvidia.com/gpu through "+f.Reported)
	case target != f.Reported:
		return switching(true, false, "switching to %s: waiting for the agent to serve nvidia.com/gpu through it (it reports %s)", target, f.Reported)
	case !f.Held:
		return switching(true, false, "switched from %s to %s: holding the node for an acceptance run on %s", f.Settled, f.Reported, f.Reported)
	case !f.Answered.IsZero() && f.Answered.After(f.HeldSince) && !f.Outstanding:
		d := served(f.Reported, fmt.Sprintf("switched to %s; acceptance generation %d answered after the switch", f.Reported, f.Generation))
		d.Release = true
		return d
	case f.Outstanding:
		return switching(true, false, "switched to %s: waiting for the answer of acceptance generation %d", f.Reported, f.Generation)
	}
	return switching(true, true, "switched to %s: acceptance requested", f.Reported)
}

func served(api, msg string) SwitchDecision {
	reason := ReasonServedByDevicePlugin
	if api == v1alpha1.GPUAPIDRA {
		reason = ReasonServedByDRA
	}
	return SwitchDecision{Status: metav1.ConditionTrue, Reason: reason, Message: msg}
}

func switching(hold, request bool, format string, args ...any) SwitchDecision {
	return SwitchDecision{Hold: hold, RequestAcceptance: request, Status: metav1.ConditionFalse,
		Reason: HoldReasonGPUAPISwitch, Message: fmt.Sprintf(format, args...)}
}

// settledAPI is the API condition GPUAPI says the node was accepted on ("" none).
func settledAPI(c *metav1.Condition) string {
	if c == nil || c.Status != metav1.ConditionTrue {
		return ""
	}
	switch c.Reason {
	case ReasonServedByDRA:
		return v1alpha1.GPUAPIDRA
	case ReasonServedByDevicePlugin:
		return v1alpha1.GPUAPIDevicePlugin
	}
	return ""
}
