package upgrade

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

func TestSpecOf(t *testing.T) {
	tests := []struct {
		name                string
		change              func(s *v1alpha1.StackUpgradeSpec)
		canaries, perDomain int
		maxUnavailable, pct int
		soak                time.Duration
		err                 string
	}{
		{"an upgrade that sets nothing takes one canary, a 10m soak and one node at a time", func(*v1alpha1.StackUpgradeSpec) {},
			1, 1, 1, 0, 10 * time.Minute, ""},
		{"a percentage unavailable is a percentage, not a count", func(s *v1alpha1.StackUpgradeSpec) {
			s.Waves.MaxUnavailable = ptr.To(intstr.FromString("10%"))
		}, 1, 1, 0, 10, 10 * time.Minute, ""},
		{"counts and the soak are taken as given", func(s *v1alpha1.StackUpgradeSpec) {
			s.Canary.Count, s.Waves.MaxPerDomain = ptr.To(int32(3)), ptr.To(int32(2))
			s.Waves.MaxUnavailable = ptr.To(intstr.FromInt32(5))
			s.Soak = &metav1.Duration{Duration: time.Hour}
		}, 3, 2, 5, 0, time.Hour, ""},
		{"a percentage the API server would refuse is an error naming the field", func(s *v1alpha1.StackUpgradeSpec) {
			s.Waves.MaxUnavailable = ptr.To(intstr.FromString("ten"))
		}, 0, 0, 0, 0, 0, "spec.waves.maxUnavailable"},
		{"a canary selector that cannot be read is an error naming the field", func(s *v1alpha1.StackUpgradeSpec) {
			s.Canary.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
		}, 0, 0, 0, 0, 0, "spec.canary.selector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			su := stackUpgrade("x", "p")
			tt.change(&su.Spec)
			s, err := SpecOf(su)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want one naming %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.CanaryCount != tt.canaries || s.MaxPerDomain != tt.perDomain || s.MaxUnavailable != tt.maxUnavailable ||
				s.MaxUnavailablePercent != tt.pct || s.Soak != tt.soak {
				t.Errorf("spec = %+v", s)
			}
			if s.Target.Driver != "580.95.05" || len(s.DomainKeys) != 1 {
				t.Errorf("target %+v, domain keys %v; want driver 580.95.05 and rack", s.Target, s.DomainKeys)
			}
		})
	}
}
