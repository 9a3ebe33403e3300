package remediation

import (
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/remediation"
)

// AnnotationState is the GPUNode annotation holding remediation.State as JSON. It is
// written in the same update as spec.remediation and spec.acceptanceGeneration, so a step
// is recorded as started before (never after) the agent can see the request for it.
const AnnotationState = v1alpha1.AnnotationRemediationState

// ReasonGPUsUnreadable is the reason of the agent's GPUHealthy condition when it cannot read
// the GPUs at all: the driver is not loaded.
const ReasonGPUsUnreadable = "GPUsUnreadable"

// ReadState returns the State persisted on gn; a GPUNode without the annotation has the
// zero State. A malformed annotation is an error: nothing is decided for the node until a
// person repairs or deletes it (guessing could start a step twice).
func ReadState(gn *v1alpha1.GPUNode) (remediation.State, error) {
	var s remediation.State
	v, ok := gn.Annotations[AnnotationState]
	if !ok || v == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return remediation.State{}, fmt.Errorf("read annotation %s of GPUNode %q: %w", AnnotationState, gn.Name, err)
	}
	return s, nil
}

// RenderState is the annotation value for s.
func RenderState(s remediation.State) (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("render remediation state: %w", err)
	}
	return string(b), nil
}

// Facts maps a GPUNode, its Node's holds and labels and its pool into remediation.Facts.
// holds are the Node's (nodeops); domainKey is the pool's failure-domain label.
//
// Each GPU's pods and compute processes come from status.gpuHealth (unknown counts as none:
// the agent refuses a reset while a process holds the GPU anyway). The GPUHealthy condition
// with reason GPUsUnreadable (the driver is not loaded) is the node fault driver-not-loaded.
// The latest step outcome is the agent's answer or the controller's own (reload-driver),
// whichever answers the higher request ID.
func Facts(gn *v1alpha1.GPUNode, nodeLabels map[string]string, holds nodeops.Holds, pool, domainKey string, state remediation.State) remediation.Facts {
	f := remediation.Facts{Node: gn.Name, Pool: pool, State: state}
	if domainKey != "" {
		f.Domain = nodeLabels[domainKey]
	}
	uuids := map[int32]string{}
	for _, g := range gn.Status.Inventory.GPUs {
		uuids[g.Index] = g.UUID
	}
	for _, g := range gn.Status.GPUHealth {
		uuid := g.UUID
		if uuid == "" {
			uuid = uuids[g.Index]
		}
		f.GPUs = append(f.GPUs, remediation.GPU{
			Index: int(g.Index), UUID: uuid, Health: health.Health(g.Health), Action: fault.Action(g.Action),
			Causes: g.Causes, Since: g.Since.Time, AwaitingCheck: g.AwaitingCheck,
			Pods: len(g.Pods), Processes: int(ptr.Deref(g.Processes, 0)),
		})
	}
	f.NodeFaults = nodeFaults(gn, nodeLabels)
	for _, h := range holds {
		f.Holds = append(f.Holds, remediation.Hold{Owner: h.Owner, Reason: h.Reason, Since: h.Since})
	}
	f.Acceptance.Requested = gn.Spec.AcceptanceGeneration
	if la := gn.Status.LastAcceptance; la != nil {
		f.Acceptance.Generation, f.Acceptance.Passed, f.Acceptance.At = la.Generation, la.Result == v1alpha1.AcceptancePassed, la.Time.Time
	}
	if a := gn.Status.RemediationAnswer; a != nil {
		f.Outcome = &remediation.Outcome{ID: a.ID, Result: outcomeResult(a.Outcome), At: a.Finished.Time, Detail: a.Message}
		if a.Evidence != nil && a.Outcome == v1alpha1.OutcomeSucceeded {
			f.Evidence = &remediation.Evidence{ID: a.ID, SHA256: a.Evidence.SHA256, At: a.Evidence.Created.Time}
		}
	}
	if cs, err := ReadControllerStep(gn); err == nil && cs != nil && cs.Outcome != "" && (f.Outcome == nil || cs.ID > f.Outcome.ID) {
		f.Outcome = &remediation.Outcome{ID: cs.ID, Result: outcomeResult(cs.Outcome), At: cs.Finished, Detail: cs.Message}
	}
	if v := gn.Annotations[v1alpha1.AnnotationRelease]; v != "" {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			f.ReleaseRequested = t
		}
	}
	return f
}

// nodeFaults are the node's faults: a GPUHealthy condition saying the GPUs cannot be read
// (the driver is not loaded) is a fatal driver-not-loaded fault that asks for a driver
// reload, since the condition's last transition. On a node whose driver a StackPool
// deploys, or that the GPU Operator paused, a driver not loaded is the stack's to wait for
// (acceptance.StackWaits), not a fault.
func nodeFaults(gn *v1alpha1.GPUNode, nodeLabels map[string]string) []remediation.NodeFault {
	c := meta.FindStatusCondition(gn.Status.Conditions, v1alpha1.ConditionGPUHealthy)
	if c == nil || c.Reason != ReasonGPUsUnreadable || acceptance.StackWaits(gn, nodeLabels) {
		return nil
	}
	return []remediation.NodeFault{{
		Cause: remediation.CauseDriverNotLoaded, Action: fault.ActionReloadDriver, Since: c.LastTransitionTime.Time, Fatal: true,
	}}
}

// outcomeResult maps the agent's outcome; TimedOut (the controller's own verdict) and
// anything unknown count as failures.
func outcomeResult(o v1alpha1.StepOutcome) remediation.OutcomeResult {
	switch o {
	case v1alpha1.OutcomeSucceeded:
		return remediation.OutcomeSucceeded
	case v1alpha1.OutcomeRefused:
		return remediation.OutcomeRefused
	}
	return remediation.OutcomeFailed
}

// Policy maps a pool's API policy into remediation.Policy; unset fields stay zero and take
// remediation's defaults. A percentage that does not parse is an error naming the pool.
func Policy(pool string, p v1alpha1.RemediationPolicy) (remediation.Policy, error) {
	out := remediation.Policy{Disabled: p.Disabled, DrainTimeout: duration(p.DrainTimeout)}
	// Without a driver pod to delete there is no driver reload: the rung is skipped.
	out.ReloadDriver.Disabled = p.DriverPodSelector == nil
	for _, sp := range p.Steps {
		m := remediation.StepPolicy{
			Disabled: sp.Disabled, MaxAttempts: int(sp.MaxAttempts),
			Window: duration(sp.Window), Backoff: duration(sp.Backoff), Timeout: duration(sp.Timeout),
		}
		switch sp.Step {
		case v1alpha1.StepRestartApp:
			out.RestartApp = m
		case v1alpha1.StepResetGPU:
			out.ResetGPU = m
		case v1alpha1.StepReloadDriver:
			m.Disabled = m.Disabled || p.DriverPodSelector == nil
			out.ReloadDriver = m
		case v1alpha1.StepRebootNode:
			out.RebootNode = m
		case v1alpha1.StepPowerCycle:
			out.PowerCycle = m
			// Whether a power-cycle command exists is the agent's configuration; a
			// pool that tunes the step says it has one.
			out.PowerCycleConfigured = !sp.Disabled
		}
	}
	if b := p.Budget; b != nil {
		n, pct, err := countOrPercent(b.MaxUnavailable)
		if err != nil {
			return remediation.Policy{}, fmt.Errorf("policy %q budget.maxUnavailable: %w", pool, err)
		}
		out.Budget = remediation.Budget{MaxHeld: n, MaxHeldPercent: pct, DomainKey: b.FailureDomainKey}
		if b.FailureDomainKey != "" {
			out.Budget.MaxHeldPerDomain, out.Budget.MaxHeldPerDomainPercent = n, pct
		}
	}
	if b := p.Breaker; b != nil {
		n, pct, err := countOrPercent(b.Threshold)
		if err != nil {
			return remediation.Policy{}, fmt.Errorf("policy %q breaker.threshold: %w", pool, err)
		}
		out.Breaker = remediation.BreakerPolicy{Count: n, Percent: pct, Window: duration(b.Window)}
	}
	return out, nil
}

// countOrPercent reads an int-or-string: a count, or a percentage "N%".
func countOrPercent(v *intstr.IntOrString) (count, percent int, err error) {
	if v == nil {
		return 0, 0, nil
	}
	if v.Type == intstr.Int {
		return v.IntValue(), 0, nil
	}
	var p int
	if _, err := fmt.Sscanf(v.StrVal, "%d%%", &p); err != nil || fmt.Sprintf("%d%%", p) != v.StrVal {
		return 0, 0, fmt.Errorf("%q is neither a count nor a percentage like \"10%%\"", v.StrVal)
	}
	return 0, p, nil
}

// Breaker maps a pool's persisted breaker and its resume annotation.
func Breaker(p *v1alpha1.GPUNodePolicy) remediation.Breaker {
	var b remediation.Breaker
	if s := p.Status.Breaker; s != nil {
		b = remediation.Breaker{TrippedAt: s.TrippedAt.Time, Reason: s.Reason, Faulting: int(s.Faulting), Nodes: int(s.Nodes)}
	}
	if v := p.Annotations[v1alpha1.AnnotationResumeRemediation]; v != "" {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			b.ResumedAt = t
		}
	}
	return b
}

func duration(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}
