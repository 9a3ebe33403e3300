package acceptance

import (
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

func TestDecidePhase(t *testing.T) {
	acceptance := nodeops.Hold{Owner: v1alpha1.HoldOwnerAcceptance, Reason: "new node", Since: at}
	remediationLater := nodeops.Hold{Owner: v1alpha1.HoldOwnerRemediation, Reason: "xid 79", Since: at.Add(time.Hour)}
	remediationEarlier := nodeops.Hold{Owner: v1alpha1.HoldOwnerRemediation, Reason: "xid 79", Since: at.Add(-time.Hour)}
	lost := nodeops.Hold{Owner: v1alpha1.HoldOwnerLiveness, Reason: v1alpha1.HoldReasonAgentLost, Since: at.Add(time.Hour)}
	tests := []struct {
		name      string
		current   v1alpha1.Phase
		holds     nodeops.Holds
		accepted  bool
		published bool
		want      v1alpha1.Phase
	}{
		{"a node held for acceptance is Accepting", "", nodeops.Holds{acceptance}, false, true, v1alpha1.PhaseAccepting},
		{"a failed node keeps Accepting while its acceptance hold is the oldest", v1alpha1.PhaseAccepting, nodeops.Holds{acceptance, remediationLater}, false, true, v1alpha1.PhaseAccepting},
		{"an accepted node without holds is InService", v1alpha1.PhaseAccepting, nil, true, true, v1alpha1.PhaseInService},
		{"an accepted node whose oldest hold is remediation's takes remediation's phase", v1alpha1.PhaseAccepting, nodeops.Holds{remediationEarlier}, true, true, v1alpha1.PhaseQuarantined},
		{"a phase the remediation controller set is kept while its hold remains", v1alpha1.PhaseRecovering, nodeops.Holds{remediationEarlier}, true, true, v1alpha1.PhaseRecovering},
		{"an operator's own hold means Maintenance", v1alpha1.PhaseInService, nodeops.Holds{{Owner: "alice", Reason: "bios", Since: at}}, true, true, v1alpha1.PhaseMaintenance},
		{"an unheld node never accepted whose facts are not published is Discovered", "", nil, false, false, v1alpha1.PhaseDiscovered},
		{"an unheld node never accepted is Accepting", "", nil, false, true, v1alpha1.PhaseAccepting},
		{"a node in service whose agent is lost is AgentLost", v1alpha1.PhaseInService, nodeops.Holds{lost}, true, true, v1alpha1.PhaseAgentLost},
		{"a node whose agent is lost is AgentLost even when an older hold is acceptance's", v1alpha1.PhaseAccepting, nodeops.Holds{acceptance, lost}, false, true, v1alpha1.PhaseAgentLost},
		{"a node whose agent came back leaves AgentLost for its other hold's phase", v1alpha1.PhaseAgentLost, nodeops.Holds{acceptance}, false, true, v1alpha1.PhaseAccepting},
		{"a node whose agent came back without other holds is InService again", v1alpha1.PhaseAgentLost, nil, true, true, v1alpha1.PhaseInService},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecidePhase(tt.current, tt.holds, tt.accepted, tt.published); got != tt.want {
				t.Errorf("DecidePhase = %s, want %s", got, tt.want)
			}
		})
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
	if len(got[1].Message) > maxHoldMessage || !strings.HasPrefix(got[1].Message, "é") || !utf8Valid(got[1].Message) {
		t.Errorf("a long reason was not cut to %d valid bytes: %d bytes", maxHoldMessage, len(got[1].Message))
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestRemediationPhase(t *testing.T) {
	tests := []struct {
		name  string
		state string
		want  v1alpha1.Phase
	}{
		{"a node without remediation state has no remediation phase", "", ""},
		{"remediation accepting a node after a reset gives Accepting", `{"phase":"Accepting","step":"reset-gpu"}`, v1alpha1.PhaseAccepting},
		{"a node waiting for budget is Suspect", `{"phase":"Suspect"}`, v1alpha1.PhaseSuspect},
		{"remediation that let go of the node leaves the phase to acceptance", `{"attempts":[{"step":"reset-gpu"}]}`, ""},
		{"a phase remediation does not own is ignored", `{"phase":"InService"}`, ""},
		{"unreadable state is no claim (the remediation controller reports it)", `{"phase":`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gn := &v1alpha1.GPUNode{}
			if tt.state != "" {
				gn.Annotations = map[string]string{v1alpha1.AnnotationRemediationState: tt.state}
			}
			if got := RemediationPhase(gn); got != tt.want {
				t.Errorf("RemediationPhase = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNodeOfRecordName(t *testing.T) {
	tests := []struct{ name, record, want string }{
		{"a record the agent named gives its node", "gpu-node-17-20261129t160341z-636f6bc5", "gpu-node-17"},
		{"a node name without dashes", "vm-20261129t185241z-4653027c", "vm"},
		{"a name without the time and hash is no node", "my-record", ""},
		{"a wrong time stamp is no node", "node-20261129-636f6bc5", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeOfRecordName(tt.record); got != tt.want {
				t.Errorf("nodeOfRecordName(%q) = %q, want %q", tt.record, got, tt.want)
			}
		})
	}
}
