package upgrade

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/upgrade"
)

// Defaults of a StackUpgrade's spec.
const (
	DefaultSoak         = 10 * time.Minute
	DefaultCanaryCount  = 1
	DefaultMaxPerDomain = 1
)

// SpecOf is the planner's view of su's spec, defaults applied. A spec the API server let
// through but the planner cannot read is an error naming the field.
func SpecOf(su *v1alpha1.StackUpgrade) (upgrade.Spec, error) {
	in := su.Spec
	s := upgrade.Spec{
		Target:      upgrade.Versions(targetVersions(in.Target)),
		CanaryCount: DefaultCanaryCount, Soak: DefaultSoak,
		DomainKeys: in.Waves.FailureDomainKeys, MaxPerDomain: DefaultMaxPerDomain, MaxUnavailable: 1,
		Paused: in.Paused, Abort: in.Abort,
	}
	if in.Canary.Count != nil {
		s.CanaryCount = int(*in.Canary.Count)
	}
	if in.Canary.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(in.Canary.Selector)
		if err != nil {
			return upgrade.Spec{}, fmt.Errorf("spec.canary.selector: %w", err)
		}
		s.CanarySelector = sel
	}
	if in.Soak != nil {
		s.Soak = in.Soak.Duration
	}
	if in.Waves.MaxPerDomain != nil {
		s.MaxPerDomain = int(*in.Waves.MaxPerDomain)
	}
	if mu := in.Waves.MaxUnavailable; mu != nil {
		n, pct, err := countOrPercent(*mu)
		if err != nil {
			return upgrade.Spec{}, fmt.Errorf("spec.waves.maxUnavailable: %w", err)
		}
		s.MaxUnavailable, s.MaxUnavailablePercent = n, pct
	}
	return s, nil
}

func targetVersions(t v1alpha1.UpgradeTarget) v1alpha1.UpgradeVersions {
	return v1alpha1.UpgradeVersions(t)
}

// countOrPercent reads 3 as (3, 0) and "10%" as (0, 10).
func countOrPercent(v intstr.IntOrString) (n, pct int, err error) {
	if v.Type == intstr.Int {
		if v.IntVal < 1 {
			return 0, 0, fmt.Errorf("%d: at least 1", v.IntVal)
		}
		return int(v.IntVal), 0, nil
	}
	p, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	if err != nil || !strings.HasSuffix(v.StrVal, "%") || p < 1 || p > 100 {
		return 0, 0, fmt.Errorf("%q: a count or a percentage from 1%% to 100%%", v.StrVal)
	}
	return 0, p, nil
}

// matrixOf is the planner's version matrix.
func matrixOf(in []v1alpha1.VersionConstraint) []upgrade.Constraint {
	out := make([]upgrade.Constraint, len(in))
	for i, c := range in {
		out[i] = upgrade.Constraint(c)
	}
	return out
}
