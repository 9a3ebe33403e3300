package upgrade

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/upgrade"
)

// view is what one pass found, for the status.
type view struct {
	// refused: why the upgrade may not run (none: it may).
	refused []upgrade.Refusal
	from    upgrade.Versions
	nodes   []upgrade.Node
	// entries are the status entries read, by node.
	entries  map[string]v1alpha1.UpgradeNodeStatus
	decision upgrade.Decision
}

// statusOf is the status a pass reports, conditions without their times (setCondition
// stamps them).
func statusOf(su *v1alpha1.StackUpgrade, v view) (v1alpha1.StackUpgradeStatus, []metav1.Condition) {
	st := v1alpha1.StackUpgradeStatus{ObservedGeneration: su.Generation, Nodes: int32(len(v.nodes))}
	if len(v.refused) > 0 {
		var reasons, msgs []string
		for _, r := range v.refused {
			reasons, msgs = append(reasons, r.Reason), append(msgs, r.Message)
		}
		st.Phase = v1alpha1.UpgradeRefused
		st.Progress = fmt.Sprintf("0/%d", len(v.nodes))
		return st, []metav1.Condition{
			{Type: v1alpha1.ConditionUpgradeAccepted, Status: metav1.ConditionFalse, Reason: reasons[0], Message: strings.Join(msgs, "; ")},
			{Type: v1alpha1.ConditionUpgradeProgressing, Status: metav1.ConditionFalse, Reason: reasons[0], Message: "refused before any node moved"},
		}
	}
	st.From = su.Status.From
	if st.From == (v1alpha1.UpgradeVersions{}) {
		st.From = v1alpha1.UpgradeVersions(v.from)
	}
	d := v.decision
	st.Phase, st.Wave = v1alpha1.UpgradePhase(d.Phase), int32(d.Wave)
	canary := map[string]bool{}
	for _, c := range d.Canaries {
		canary[c] = true
	}
	target := upgrade.Versions(targetVersions(su.Spec.Target))
	var entries []v1alpha1.UpgradeNodeStatus
	for _, n := range v.nodes {
		e, had := v.entries[n.Name]
		switch {
		case n.State == upgrade.Done || (n.State == upgrade.Pending && n.Running.Reaches(target)):
			st.Upgraded++
		case n.State == upgrade.InProgress:
			st.InProgress++
		case n.State == upgrade.Failed:
			st.Failed++
		}
		if !had && !canary[n.Name] {
			continue
		}
		if !had {
			e = v1alpha1.UpgradeNodeStatus{Name: n.Name, Phase: v1alpha1.NodeUpgradePending, Message: "a canary: starts first"}
		}
		e.Canary = e.Canary || canary[n.Name]
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b v1alpha1.UpgradeNodeStatus) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(entries) > v1alpha1.MaxUpgradeNodeStatus {
		st.NodeStatusOmitted = int32(len(entries) - v1alpha1.MaxUpgradeNodeStatus)
		entries = entries[:v1alpha1.MaxUpgradeNodeStatus]
	}
	st.NodeStatus = entries
	st.Progress = fmt.Sprintf("%d/%d", st.Upgraded, st.Nodes)
	return st, conditionsOf(d)
}

// rank orders the entries kept when the cap bites: failed, in progress, canaries, the rest.
func rank(e v1alpha1.UpgradeNodeStatus) int {
	switch {
	case e.Phase == v1alpha1.NodeUpgradeFailed:
		return 0
	case e.Phase != v1alpha1.NodeUpgradePending && e.Phase != v1alpha1.NodeUpgradeDone:
		return 1
	case e.Canary:
		return 2
	}
	return 3
}

func conditionsOf(d upgrade.Decision) []metav1.Condition {
	accepted := metav1.Condition{Type: v1alpha1.ConditionUpgradeAccepted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonUpgradeValid,
		Message: "the target satisfies the version matrix and no older upgrade runs on the pool's nodes"}
	cond := func(typ string, on bool, reason string) metav1.Condition {
		c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: d.Message}
		if on {
			c.Status = metav1.ConditionTrue
		}
		return c
	}
	running := d.Phase == upgrade.PhaseCanary || d.Phase == upgrade.PhaseRolling || d.Phase == upgrade.PhaseSoaking
	halted := d.Phase == upgrade.PhaseHalted
	gate := string(d.Phase)
	if halted {
		gate = v1alpha1.ReasonUpgradeGateFailed
	}
	return []metav1.Condition{accepted,
		cond(v1alpha1.ConditionUpgradeProgressing, running, string(d.Phase)),
		cond(v1alpha1.ConditionUpgradeHalted, halted, gate),
		cond(v1alpha1.ConditionUpgradeComplete, d.Phase == upgrade.PhaseComplete, string(d.Phase)),
	}
}
