package acceptance

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// maxHoldMessage is the API's limit on a hold's message.
const maxHoldMessage = 1024

// ownerPattern is the API's pattern for a hold's owner.
var ownerPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// ownerPhases is the phase a node takes when a built-in owner's hold is its oldest; any
// other owner (an operator's own name) means Maintenance.
var ownerPhases = map[string]v1alpha1.Phase{
	v1alpha1.HoldOwnerAcceptance:  v1alpha1.PhaseAccepting,
	v1alpha1.HoldOwnerRemediation: v1alpha1.PhaseQuarantined,
	v1alpha1.HoldOwnerUpgrade:     v1alpha1.PhaseUpgrading,
	v1alpha1.HoldOwnerOperator:    v1alpha1.PhaseMaintenance,
}

// ownedElsewhere are the phases other controllers (remediation, upgrade, maintenance) set
// while their hold is the node's oldest; acceptance keeps them.
var ownedElsewhere = map[v1alpha1.Phase]bool{
	v1alpha1.PhaseSuspect: true, v1alpha1.PhaseQuarantined: true, v1alpha1.PhaseRecovering: true,
	v1alpha1.PhaseMaintenance: true, v1alpha1.PhaseUpgrading: true,
}

// RemediationPhase is the phase the remediation controller's state on gn gives the node
// (Suspect, Quarantined, Recovering, Accepting, Maintenance), or "" when remediation has no
// claim on it (or its state cannot be read: the remediation controller reports that). One
// rule for both controllers, so that they never write different phases in turn.
func RemediationPhase(gn *v1alpha1.GPUNode) v1alpha1.Phase {
	v := gn.Annotations[v1alpha1.AnnotationRemediationState]
	if v == "" {
		return ""
	}
	var st struct {
		Phase v1alpha1.Phase `json:"phase"`
	}
	if err := json.Unmarshal([]byte(v), &st); err != nil {
		return ""
	}
	switch st.Phase {
	case v1alpha1.PhaseSuspect, v1alpha1.PhaseQuarantined, v1alpha1.PhaseRecovering, v1alpha1.PhaseAccepting, v1alpha1.PhaseMaintenance:
		return st.Phase
	}
	return ""
}

// DecidePhase returns the node's phase. A node held by liveness (its agent is lost) is
// AgentLost, whatever else holds it: nothing else moves until the agent is back. With
// other holds, the oldest hold's owner decides: an acceptance hold means Accepting;
// another owner's hold keeps a phase that owner's controller set (Suspect, Quarantined,
// Recovering, Maintenance, Upgrading), or else takes the owner's phase. Without holds, an
// accepted node is InService, a node whose facts are not yet published is Discovered, and
// any other node is Accepting.
func DecidePhase(current v1alpha1.Phase, holds nodeops.Holds, accepted, published bool) v1alpha1.Phase {
	if _, lost := holds.Find(v1alpha1.HoldOwnerLiveness); lost {
		return v1alpha1.PhaseAgentLost
	}
	if oldest, ok := holds.Oldest(); ok {
		if oldest.Owner == v1alpha1.HoldOwnerAcceptance {
			return v1alpha1.PhaseAccepting
		}
		if ownedElsewhere[current] {
			return current
		}
		if p, ok := ownerPhases[oldest.Owner]; ok {
			return p
		}
		return v1alpha1.PhaseMaintenance
	}
	switch {
	case accepted:
		return v1alpha1.PhaseInService
	case !published:
		return v1alpha1.PhaseDiscovered
	}
	return v1alpha1.PhaseAccepting
}

// StatusHolds mirrors a node's holds into GPUNode status: the reason becomes the taint's
// sanitised form and the full reason the message. A hold whose owner the API would refuse
// is left out (it stays on the Node); at most MaxHolds are listed.
func StatusHolds(holds nodeops.Holds) []v1alpha1.Hold {
	var out []v1alpha1.Hold
	for _, h := range holds {
		if !ownerPattern.MatchString(h.Owner) || len(h.Owner) > 63 || len(out) == v1alpha1.MaxHolds {
			continue
		}
		msg := h.Reason
		if len(msg) > maxHoldMessage {
			msg = strings.ToValidUTF8(msg[:maxHoldMessage], "")
		}
		out = append(out, v1alpha1.Hold{
			Owner: h.Owner, Reason: nodeops.SanitizeReason(h.Reason), Message: msg,
			Since: metav1.NewTime(h.Since.UTC().Truncate(time.Second)),
		})
	}
	return out
}
