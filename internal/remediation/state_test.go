package remediation

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The reconciler persists State as JSON: what it reads back must decide the same.
func TestStateSurvivesJSON(t *testing.T) {
	for _, s := range []State{{}, resetChosen, resetEvidenceRecorded, resetStarted, resetAccepting, maintenance, releasedAccepting} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal %+v: %v", s, err)
		}
		var back State
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if !reflect.DeepEqual(back, s) {
			t.Errorf("round trip changed the state:\n got %+v\nwant %+v\njson %s", back, s, b)
		}
	}
	if b, _ := json.Marshal(State{}); string(b) != "{}" {
		t.Errorf("the zero state is %s, want {}", b)
	}
}

func TestPrune(t *testing.T) {
	old := Attempt{Step: StepResetGPU, ID: 1, Started: t0.Add(-48 * time.Hour), Result: AttemptCleared}
	oldPending := Attempt{Step: StepRebootNode, ID: 2, Started: t0.Add(-48 * time.Hour), Result: AttemptPending}
	recent := Attempt{Step: StepResetGPU, ID: 3, Started: t0.Add(-time.Hour), Result: AttemptNotCleared}
	tests := []struct {
		name    string
		in      []Attempt
		wantIDs []int64
	}{
		{"attempts older than the window are dropped", []Attempt{old, recent}, []int64{3}},
		{"a pending attempt is never dropped, however old", []Attempt{oldPending, recent}, []int64{2, 3}},
		{"beyond the cap the oldest are dropped", func() []Attempt {
			var as []Attempt
			for i := range MaxAttempts + 2 {
				as = append(as, Attempt{Step: StepRestartApp, ID: int64(i), Started: t0, Result: AttemptCleared})
			}
			return as
		}(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := State{Attempts: tt.in}
			s.prune(t0, 24*time.Hour)
			var ids []int64
			for _, a := range s.Attempts {
				ids = append(ids, a.ID)
			}
			if tt.wantIDs == nil {
				if len(ids) != MaxAttempts || ids[0] != 2 {
					t.Errorf("kept %d attempts from ID %d, want %d from ID 2", len(ids), ids[0], MaxAttempts)
				}
				return
			}
			if !reflect.DeepEqual(ids, tt.wantIDs) {
				t.Errorf("kept %v, want %v", ids, tt.wantIDs)
			}
		})
	}
}
