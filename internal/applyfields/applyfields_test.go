package applyfields_test

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/applyfields"
)

func TestAnApplyCarriesTheFieldsItsWriterSetsAndNoOthers(t *testing.T) {
	cases := []struct {
		name string
		in   any
		want map[string]any
	}{
		{"an empty status applies nothing", v1alpha1.GPUNodeStatus{}, map[string]any{}},
		{"a phase alone applies the phase alone", v1alpha1.GPUNodeStatus{Phase: v1alpha1.PhaseInService},
			map[string]any{"phase": "InService"}},
		{"a heartbeat applies its time in RFC 3339", v1alpha1.GPUNodeStatus{Agent: &v1alpha1.AgentStatus{
			HeartbeatTime: metav1.NewTime(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))}},
			map[string]any{"agent": map[string]any{"heartbeatTime": "2026-12-02T00:00:00Z"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := applyfields.Of(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Of(%+v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestAValueThatIsNoObjectIsAnError(t *testing.T) {
	if _, err := applyfields.Of([]int{1}); err == nil {
		t.Error("a list became apply fields")
	}
}
