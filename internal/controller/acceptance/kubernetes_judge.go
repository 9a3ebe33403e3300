package acceptance

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// KubernetesGates reports whether policy makes L2 a condition of acceptance: its layers
// name "kubernetes". Empty layers mean the node-local layers only (docs/decisions.md): L2
// is then judged and reported, but does not hold the node.
func KubernetesGates(policy *v1alpha1.GPUNodePolicy) bool {
	return slices.Contains(policy.Spec.Acceptance.Layers, LayerKubernetes)
}

// KubernetesJudgement is the L2 verdict on one record.
type KubernetesJudgement struct {
	// Record is the AcceptanceRecord judged with.
	Record string
	Checks []v1alpha1.Check
	// Gates: the policy makes L2 a condition of acceptance.
	Gates bool
}

// Failed returns the failed checks, in run order.
func (j KubernetesJudgement) Failed() []v1alpha1.Check {
	var out []v1alpha1.Check
	for _, c := range j.Checks {
		if c.Status == statusFail {
			out = append(out, c)
		}
	}
	return out
}

// Condition is v1alpha1.ConditionKubernetesInventory's status, reason and message for j.
func (j KubernetesJudgement) Condition() (metav1.ConditionStatus, string, string) {
	counts := map[v1alpha1.CheckStatus]int{}
	var notes []string
	for _, c := range j.Checks {
		counts[c.Status]++
		if c.Status == statusPass {
			continue
		}
		note := fmt.Sprintf("%s %s: %s", c.ID, c.Status, c.Message)
		if len(c.Evidence) > 0 {
			note += " [" + strings.Join(c.Evidence, "; ") + "]"
		}
		notes = append(notes, note)
	}
	gate := "gating: the policy's layers include kubernetes"
	if !j.Gates {
		gate = "advisory: the policy's layers do not include kubernetes"
	}
	msg := fmt.Sprintf("%s%d pass, %d warn, %d fail, %d skip (%s)", recordPrefix(j.Record),
		counts[statusPass], counts[statusWarn], counts[statusFail], counts[statusSkip], gate)
	if len(notes) > 0 {
		msg += "; " + strings.Join(notes, "; ")
	}
	switch {
	case counts[statusFail] > 0:
		return metav1.ConditionFalse, v1alpha1.ReasonKubernetesFailed, msg
	case counts[statusWarn] > 0:
		return metav1.ConditionTrue, v1alpha1.ReasonKubernetesWarned, msg
	}
	return metav1.ConditionTrue, v1alpha1.ReasonKubernetesPassed, msg
}

func recordPrefix(record string) string { return "record " + record + ": " }

// Apply folds j into v, the verdict on the record: a record that passed is held when L2
// gates and a check failed, with the first failed check's ID leading the message (it
// becomes the hold's reason). Any other verdict is returned unchanged.
func (j KubernetesJudgement) Apply(v Verdict) Verdict {
	failed := j.Failed()
	if !v.Accepted || !j.Gates || len(failed) == 0 {
		return v
	}
	msg := fmt.Sprintf("%s: %s", failed[0].ID, failed[0].Message)
	if rest := len(failed) - 1; rest > 0 {
		ids := make([]string, 0, rest)
		for _, c := range failed[1:] {
			ids = append(ids, c.ID)
		}
		msg += fmt.Sprintf(" (and %s)", strings.Join(ids, ", "))
	}
	return Verdict{Reason: v1alpha1.ReasonKubernetesCheckFailed, Message: fmt.Sprintf("%s (record %s)", msg, j.Record)}
}

// NeedKubernetesJudgement decides whether this pass judges L2 for record again. L2 is
// judged once per answered record; only a gating failure of a record that passed is judged
// again (until it passes), because Kubernetes's view may still catch up (the device
// plugin registers, the kubelet turns Ready). A verdict once given is kept: acceptance is a
// gate on entry, and L2 drift on an accepted node (a device-plugin restart) is not a
// reason to take it out of service again.
func NeedKubernetesJudgement(gn *v1alpha1.GPUNode, record string, gates, recordAccepted bool) bool {
	prior := meta.FindStatusCondition(gn.Status.Conditions, v1alpha1.ConditionKubernetesInventory)
	if prior == nil || !strings.HasPrefix(prior.Message, recordPrefix(record)) {
		return true
	}
	return gates && recordAccepted && prior.Status != metav1.ConditionTrue
}
