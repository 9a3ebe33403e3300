package lifecycle

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// Facts are what a node's phase is decided from.
type Facts struct {
	// Holds are the Node's holds (gpunode.dev/holds).
	Holds nodeops.Holds
	// Accepted: the GPUNode's Accepted condition is True.
	Accepted bool
	// Published: the agent has published the node's inventory or driver version.
	Published bool
	// Remediation is the phase remediation's state claims (status.remediation.phase): one
	// of Suspect, Quarantined, Recovering, Accepting, Maintenance, or "" for no claim.
	Remediation v1alpha1.Phase
}

// Condition is a condition's status, reason and message; the writer stamps its times.
type Condition struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Outcome is what Decide gives the GPUNode's status.
type Outcome struct {
	Phase v1alpha1.Phase
	// InService is the ConditionInService condition.
	InService Condition
	// Holds is status.holds: the Node's holds as the API accepts them.
	Holds []v1alpha1.Hold
}

// holdPhases is the phase a node takes when a built-in owner's hold is its oldest and
// remediation claims nothing; any other owner (an operator's own name) means Maintenance.
var holdPhases = map[string]v1alpha1.Phase{
	v1alpha1.HoldOwnerAcceptance:  v1alpha1.PhaseAccepting,
	v1alpha1.HoldOwnerRemediation: v1alpha1.PhaseQuarantined,
	v1alpha1.HoldOwnerUpgrade:     v1alpha1.PhaseUpgrading,
	v1alpha1.HoldOwnerOperator:    v1alpha1.PhaseMaintenance,
	// A switch of the GPU API is a planned change of the node's GPU stack that ends with
	// acceptance, as an upgrade is: not a person's service.
	v1alpha1.HoldOwnerGPUAPI: v1alpha1.PhaseUpgrading,
}

// remediationPhases are the phases remediation may claim.
var remediationPhases = map[v1alpha1.Phase]bool{
	v1alpha1.PhaseSuspect: true, v1alpha1.PhaseQuarantined: true, v1alpha1.PhaseRecovering: true,
	v1alpha1.PhaseAccepting: true, v1alpha1.PhaseMaintenance: true,
}

// Decide is the node's phase, InService condition and status holds. In order:
//   - a node held by liveness (its agent is lost) is AgentLost, whatever else holds it:
//     nothing else moves until the agent is back;
//   - a node remediation claims takes remediation's phase (Suspect, Quarantined,
//     Recovering, Accepting, Maintenance);
//   - a held node takes the phase of its oldest hold's owner: acceptance Accepting,
//     upgrade and gpu-api Upgrading, remediation Quarantined, anyone else Maintenance;
//   - a node with no hold is InService once accepted, Discovered while its agent has
//     published nothing, and Accepting otherwise.
//
// InService is True exactly when the phase is InService; otherwise its reason is the
// phase and its message what keeps the node out of service.
func Decide(f Facts) Outcome {
	out := Outcome{Holds: StatusHolds(f.Holds)}
	out.Phase = phase(f)
	if out.Phase == v1alpha1.PhaseInService {
		out.InService = Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonInService,
			Message: "accepted and not held: the node takes work"}
		return out
	}
	out.InService = Condition{Status: metav1.ConditionFalse, Reason: string(out.Phase), Message: why(f, out.Phase)}
	return out
}

func phase(f Facts) v1alpha1.Phase {
	if _, lost := f.Holds.Find(v1alpha1.HoldOwnerLiveness); lost {
		return v1alpha1.PhaseAgentLost
	}
	if remediationPhases[f.Remediation] {
		return f.Remediation
	}
	if oldest, ok := f.Holds.Oldest(); ok {
		if p, ok := holdPhases[oldest.Owner]; ok {
			return p
		}
		return v1alpha1.PhaseMaintenance
	}
	switch {
	case f.Accepted:
		return v1alpha1.PhaseInService
	case !f.Published:
		return v1alpha1.PhaseDiscovered
	}
	return v1alpha1.PhaseAccepting
}

// why says what keeps a node in phase p out of service.
func why(f Facts, p v1alpha1.Phase) string {
	var parts []string
	switch {
	case p == v1alpha1.PhaseDiscovered:
		parts = append(parts, "the agent has not published the node's inventory yet")
	case remediationPhases[f.Remediation] && p == f.Remediation:
		parts = append(parts, "remediation: "+string(f.Remediation))
	case len(f.Holds) == 0:
		parts = append(parts, "not accepted yet")
	}
	if oldest, ok := f.Holds.Oldest(); ok {
		parts = append(parts, fmt.Sprintf("oldest hold: %s (%s) since %s", oldest.Owner, oldest.Reason,
			oldest.Since.UTC().Format(time.RFC3339)))
		if n := len(f.Holds); n > 1 {
			parts = append(parts, fmt.Sprintf("%d holds", n))
		}
	}
	return strings.Join(parts, "; ")
}

// maxHoldMessage is the API's limit on a hold's message.
const maxHoldMessage = 1024

// ownerPattern is the API's pattern for a hold's owner.
var ownerPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

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
