package v1alpha1_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
)

// jsonNames lists a struct type's JSON field names.
func jsonNames(typ reflect.Type) map[string]bool {
	names := map[string]bool{}
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		names[name] = true
	}
	return names
}

// GPUNodePolicy embeds the acceptance policy under the same field names, so that the
// controller can hand it to internal/accept and a policy file reads the same as the CRD.
func TestGPUNodePolicyMirrorsEveryFieldOfTheAcceptancePolicy(t *testing.T) {
	tests := []struct {
		name   string
		accept any
		api    any
	}{
		{"each class expectation has every field of accept.Expect", accept.Expect{}, v1alpha1.ClassExpectation{}},
		{"the version matrix has every field of accept.Versions", accept.Versions{}, v1alpha1.VersionMatrix{}},
		{"the thresholds have every field of accept.Thresholds", accept.Thresholds{}, v1alpha1.Thresholds{}},
		{"the host policy has every field of accept.HostPolicy", accept.HostPolicy{}, v1alpha1.HostPolicy{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have := jsonNames(reflect.TypeOf(tt.api))
			for name := range jsonNames(reflect.TypeOf(tt.accept)) {
				if !have[name] {
					t.Errorf("%T has no field %q of %T", tt.api, name, tt.accept)
				}
			}
		})
	}
}
