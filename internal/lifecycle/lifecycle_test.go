package lifecycle

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

var at = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var (
	acceptanceHold     = nodeops.Hold{Owner: v1alpha1.HoldOwnerAcceptance, Reason: "not-accepted", Since: at}
	remediationHold    = nodeops.Hold{Owner: v1alpha1.HoldOwnerRemediation, Reason: "xid 79", Since: at.Add(time.Hour)}
	remediationEarlier = nodeops.Hold{Owner: v1alpha1.HoldOwnerRemediation, Reason: "xid 79", Since: at.Add(-time.Hour)}
	upgradeHold        = nodeops.Hold{Owner: v1alpha1.HoldOwnerUpgrade, Reason: "driver-570", Since: at}
	livenessHold       = nodeops.Hold{Owner: v1alpha1.HoldOwnerLiveness, Reason: v1alpha1.HoldReasonAgentLost, Since: at.Add(2 * time.Hour)}
	operatorHold       = nodeops.Hold{Owner: v1alpha1.HoldOwnerOperator, Reason: "bios", Since: at}
)

func TestDecide(t *testing.T) {
	tests := []struct {
		name  string
		facts Facts
		want  v1alpha1.Phase
	}{
		{"a node whose agent published nothing is Discovered", Facts{}, v1alpha1.PhaseDiscovered},
		{"a new node held for acceptance is Accepting", Facts{Holds: nodeops.Holds{acceptanceHold}, Published: true}, v1alpha1.PhaseAccepting},
		{"a held new node is Accepting even before its inventory is published", Facts{Holds: nodeops.Holds{acceptanceHold}}, v1alpha1.PhaseAccepting},
		{"an unheld node never accepted is Accepting", Facts{Published: true}, v1alpha1.PhaseAccepting},
		{"an accepted node without holds is InService", Facts{Accepted: true, Published: true}, v1alpha1.PhaseInService},
		{"a node in service remediation suspects is Suspect before any hold", Facts{Accepted: true, Published: true, Remediation: v1alpha1.PhaseSuspect}, v1alpha1.PhaseSuspect},
		{"a node remediation holds is Quarantined", Facts{Accepted: true, Published: true, Holds: nodeops.Holds{remediationHold}, Remediation: v1alpha1.PhaseQuarantined}, v1alpha1.PhaseQuarantined},
		{"a node whose recovery step runs is Recovering", Facts{Accepted: true, Published: true, Holds: nodeops.Holds{remediationHold}, Remediation: v1alpha1.PhaseRecovering}, v1alpha1.PhaseRecovering},
		{"a recovered node awaiting its acceptance run is Accepting", Facts{Accepted: true, Published: true, Holds: nodeops.Holds{remediationHold}, Remediation: v1alpha1.PhaseAccepting}, v1alpha1.PhaseAccepting},
		{"a node the ladder gave up on is Maintenance", Facts{Accepted: true, Published: true, Holds: nodeops.Holds{remediationHold}, Remediation: v1alpha1.PhaseMaintenance}, v1alpha1.PhaseMaintenance},
		{"a remediation hold without a claim means Quarantined", Facts{Accepted: true, Published: true, Holds: nodeops.Holds{remediationHold}}, v1alpha1.PhaseQuarantined},
		{"remediation's claim wins over an older acceptance hold", Facts{Published: true, Holds: nodeops.Holds{acceptanceHold, remediationHold}, Remediation: v1alpha1.PhaseRecovering}, v1alpha1.PhaseRecovering},
		{"a failed node stays Accepting while its acceptance hold is the oldest", Facts{Published: true, Holds: nodeops.Holds{acceptanceHold, remediationHold}}, v1alpha1.PhaseAccepting},
		{"the oldest hold decides: remediation's before acceptance's means Quarantined", Facts{Published: true, Holds: nodeops.Holds{acceptanceHold, remediationEarlier}}, v1alpha1.PhaseQuarantined},
		{"a node an upgrade holds is Upgrading", Facts{Accepted: true, Published: true, Holds: nodeops.Holds{upgradeHold}}, v1alpha1.PhaseUpgrading},
		{"an upgraded node held for its acceptance run is Accepting", Facts{Published: true, Holds: nodeops.Holds{acceptanceHold}}, v1alpha1.PhaseAccepting},
		{"a node whose GPU API switches is Upgrading", Facts{Accepted: true, Published: true, Holds: nodeops.Holds{{Owner: v1alpha1.HoldOwnerGPUAPI, Reason: "GPUAPISwitch", Since: at}}}, v1alpha1.PhaseUpgrading},
		{"the operator's hold means Maintenance", Facts{Accepted: true, Published: true, Holds: nodeops.Holds{operatorHold}}, v1alpha1.PhaseMaintenance},
		{"an operator's own hold means Maintenance", Facts{Accepted: true, Published: true, Holds: nodeops.Holds{{Owner: "alice", Reason: "bios", Since: at}}}, v1alpha1.PhaseMaintenance},
		{"a node whose agent is lost is AgentLost", Facts{Accepted: true, Published: true, Holds: nodeops.Holds{livenessHold}}, v1alpha1.PhaseAgentLost},
		{"a lost agent wins over an older acceptance hold", Facts{Published: true, Holds: nodeops.Holds{acceptanceHold, livenessHold}}, v1alpha1.PhaseAgentLost},
		{"a lost agent wins over remediation's claim", Facts{Published: true, Holds: nodeops.Holds{remediationHold, livenessHold}, Remediation: v1alpha1.PhaseRecovering}, v1alpha1.PhaseAgentLost},
		{"an unknown phase claimed by remediation is no claim", Facts{Accepted: true, Published: true, Remediation: v1alpha1.PhaseInService}, v1alpha1.PhaseInService},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.facts)
			if got.Phase != tt.want {
				t.Fatalf("phase = %s, want %s", got.Phase, tt.want)
			}
			inService := tt.want == v1alpha1.PhaseInService
			if (got.InService.Status == metav1.ConditionTrue) != inService {
				t.Errorf("InService = %+v with phase %s", got.InService, got.Phase)
			}
			if !inService && (got.InService.Reason != string(tt.want) || got.InService.Message == "") {
				t.Errorf("InService = %+v, want reason %s and a message", got.InService, tt.want)
			}
		})
	}
}

// step is one change of a node's facts on a path of its lifecycle.
type step struct {
	change func(*Facts)
	want   v1alpha1.Phase
}

func holds(hs ...nodeops.Hold) func(*Facts) { return func(f *Facts) { f.Holds = hs } }

// TestEveryTransitionOfTheLifecycle walks each path of the lifecycle as the controllers'
// facts change along it, and checks each phase on the way.
func TestEveryTransitionOfTheLifecycle(t *testing.T) {
	paths := []struct {
		name  string
		start Facts
		steps []step
	}{
		{"a new node goes Discovered, Accepting, InService", Facts{}, []step{
			{func(*Facts) {}, v1alpha1.PhaseDiscovered},
			{func(f *Facts) { f.Published, f.Holds = true, nodeops.Holds{acceptanceHold} }, v1alpha1.PhaseAccepting},
			{func(f *Facts) { f.Accepted, f.Holds = true, nil }, v1alpha1.PhaseInService},
		}},
		{"a faulty node goes Suspect, Quarantined, Recovering, Accepting and back InService", Facts{Accepted: true, Published: true}, []step{
			{func(*Facts) {}, v1alpha1.PhaseInService},
			{func(f *Facts) { f.Remediation = v1alpha1.PhaseSuspect }, v1alpha1.PhaseSuspect},
			{func(f *Facts) { f.Remediation, f.Holds = v1alpha1.PhaseQuarantined, nodeops.Holds{remediationHold} }, v1alpha1.PhaseQuarantined},
			{func(f *Facts) { f.Remediation = v1alpha1.PhaseRecovering }, v1alpha1.PhaseRecovering},
			{func(f *Facts) { f.Remediation = v1alpha1.PhaseAccepting }, v1alpha1.PhaseAccepting},
			{func(f *Facts) { f.Remediation, f.Holds = "", nil }, v1alpha1.PhaseInService},
		}},
		{"a faulty node the ladder cannot repair goes Recovering, Accepting, Maintenance", Facts{Accepted: true, Published: true}, []step{
			{func(f *Facts) { f.Remediation, f.Holds = v1alpha1.PhaseRecovering, nodeops.Holds{remediationHold} }, v1alpha1.PhaseRecovering},
			{func(f *Facts) { f.Remediation = v1alpha1.PhaseAccepting }, v1alpha1.PhaseAccepting},
			{func(f *Facts) { f.Remediation, f.Accepted = v1alpha1.PhaseMaintenance, false }, v1alpha1.PhaseMaintenance},
			{func(f *Facts) { f.Remediation, f.Holds = v1alpha1.PhaseAccepting, nodeops.Holds{remediationHold} }, v1alpha1.PhaseAccepting},
			{func(f *Facts) { f.Remediation, f.Holds, f.Accepted = "", nil, true }, v1alpha1.PhaseInService},
		}},
		{"an upgraded node goes Upgrading, Accepting, InService", Facts{Accepted: true, Published: true}, []step{
			{holds(upgradeHold), v1alpha1.PhaseUpgrading},
			{func(f *Facts) { f.Accepted, f.Holds = false, nodeops.Holds{acceptanceHold} }, v1alpha1.PhaseAccepting},
			{func(f *Facts) { f.Accepted, f.Holds = true, nil }, v1alpha1.PhaseInService},
		}},
		{"a node whose agent is lost goes AgentLost and back to its phase", Facts{Accepted: true, Published: true}, []step{
			{holds(livenessHold), v1alpha1.PhaseAgentLost},
			{holds(), v1alpha1.PhaseInService},
			{func(f *Facts) { f.Remediation, f.Holds = v1alpha1.PhaseRecovering, nodeops.Holds{remediationHold} }, v1alpha1.PhaseRecovering},
			{holds(remediationHold, livenessHold), v1alpha1.PhaseAgentLost},
			{holds(remediationHold), v1alpha1.PhaseRecovering},
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			f := p.start
			var seen []string
			for i, s := range p.steps {
				s.change(&f)
				got := Decide(f).Phase
				seen = append(seen, string(got))
				if got != s.want {
					t.Fatalf("step %d: phase %s, want %s (path so far: %s)", i, got, s.want, strings.Join(seen, " → "))
				}
			}
		})
	}
}

func TestTheInServiceMessageNamesTheOldestHold(t *testing.T) {
	got := Decide(Facts{Published: true, Holds: nodeops.Holds{remediationHold, acceptanceHold}}).InService
	want := "oldest hold: acceptance (not-accepted) since 2026-03-01T12:00:00Z; 2 holds"
	if got.Status != metav1.ConditionFalse || got.Reason != string(v1alpha1.PhaseAccepting) || got.Message != want {
		t.Errorf("InService = %+v, want False/Accepting %q", got, want)
	}
}

func TestStatusHoldsKeepTheReasonInTheMessageAndTheTaintFormInTheReason(t *testing.T) {
	got := StatusHolds(nodeops.Holds{
		{Owner: v1alpha1.HoldOwnerAcceptance, Reason: "gpu-count: 7 GPUs found, 8 expected", Since: at},
		{Owner: "Not A Valid Owner", Reason: "x", Since: at},
		{Owner: "operator", Reason: strings.Repeat("é", 2000), Since: at},
	})
	if len(got) != 2 {
		t.Fatalf("StatusHolds = %+v, want 2 holds (the invalid owner left out)", got)
	}
	if got[0].Reason != "gpu-count-7-GPUs-found-8-expected" || got[0].Message != "gpu-count: 7 GPUs found, 8 expected" {
		t.Errorf("hold 0 = %+v", got[0])
	}
	if len(got[1].Message) > maxHoldMessage || !strings.HasPrefix(got[1].Message, "é") || !utf8.ValidString(got[1].Message) {
		t.Errorf("a long reason was not cut to %d valid bytes: %d bytes", maxHoldMessage, len(got[1].Message))
	}
}
