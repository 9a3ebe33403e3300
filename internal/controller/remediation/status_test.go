package remediation

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// stored is s as the API server keeps it and a read returns it: its JSON, read back.
func stored(t *testing.T, s *v1alpha1.RemediationStatus) *v1alpha1.RemediationStatus {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	out := &v1alpha1.RemediationStatus{}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAStatusIsWrittenOnlyWhenItDiffersAsTheAPIKeepsIt(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC))
	mirrored := &v1alpha1.RemediationStatus{
		Phase: v1alpha1.PhaseQuarantined, Trigger: "xid-79", FaultSince: &started,
		History: []v1alpha1.StepAttempt{{Step: v1alpha1.StepCaptureEvidence, RequestID: 1, Started: started}},
	}
	later := stored(t, mirrored)
	later.Phase = v1alpha1.PhaseRecovering
	cases := []struct {
		name      string
		base, now *v1alpha1.RemediationStatus
		same      bool
	}{
		{"a status read back mirrored again from a nanosecond clock is the same", stored(t, mirrored), mirrored, true},
		{"a status that changed phase is not the same", later, mirrored, false},
		{"a status that went away is not the same", stored(t, mirrored), nil, false},
		{"no status before and none now is the same", nil, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameRemediationStatus(tc.base, tc.now); got != tc.same {
				t.Fatalf("sameRemediationStatus = %v, want %v", got, tc.same)
			}
		})
	}
}
