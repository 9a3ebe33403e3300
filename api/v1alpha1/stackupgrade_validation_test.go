package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

// stackUpgrade is a valid upgrade: a new driver, allowed by a range.
func stackUpgrade(name string) *v1alpha1.StackUpgrade {
	return &v1alpha1.StackUpgrade{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.StackUpgradeSpec{
			Pool:          "h100",
			Target:        v1alpha1.UpgradeTarget{Driver: "580.95.05"},
			VersionMatrix: []v1alpha1.VersionConstraint{{Driver: ">=580.65,<590", Toolkit: "1.18.*"}},
		},
	}
}

func TestTheAPIServerRefusesStackUpgradesThatCannotRun(t *testing.T) {
	_, c := testenv.Start(t)
	tests := []struct {
		name   string
		change func(u *v1alpha1.StackUpgrade)
		want   string
	}{
		{"an upgrade to nothing", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Target = v1alpha1.UpgradeTarget{}
		}, "target names at least one of driver, toolkit, agent or nodeImage"},
		{"a driver target that is not a driver version", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Target.Driver = "latest"
		}, "target.driver is a driver version as NVML reports it"},
		{"a toolkit target with a space", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Target.Toolkit = "1.18 rc"
		}, "target.toolkit is a version such as 1.18.0"},
		{"an agent target that is a branch name", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Target.Agent = "main"
		}, "target.agent is a release version such as v0.9.0"},
		{"a node image id with a space", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Target.NodeImage = "ami 123"
		}, "target.nodeImage is an image id without spaces"},
		{"an upgrade without a version matrix", func(u *v1alpha1.StackUpgrade) {
			u.Spec.VersionMatrix = nil
		}, "spec.versionMatrix"},
		{"a matrix entry that is not a constraint", func(u *v1alpha1.StackUpgrade) {
			u.Spec.VersionMatrix[0].Driver = "any newer one"
		}, "versionMatrix[].driver is a version, a wildcard such as 580.* or comparisons"},
		{"a matrix entry with a comparison the planner does not know", func(u *v1alpha1.StackUpgrade) {
			u.Spec.VersionMatrix[0].Toolkit = "~1.18"
		}, "versionMatrix[].toolkit is a version, a wildcard"},
		{"a canary by selector and by count", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Canary = v1alpha1.CanaryPolicy{Count: ptr.To(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "yes"}}}
		}, "canary takes a selector or a count, not both"},
		{"no canary at all", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Canary.Count = ptr.To(int32(0))
		}, "spec.canary.count"},
		{"a maximum unavailable of no node", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Waves.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		}, "waves.maxUnavailable is a count of at least 1 or a percentage from 1% to 100%"},
		{"a maximum unavailable over the whole pool", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Waves.MaxUnavailable = ptr.To(intstr.FromString("150%"))
		}, "waves.maxUnavailable is a count of at least 1 or a percentage from 1% to 100%"},
		{"a drain that waits for no pods", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Drain.Mode = v1alpha1.DrainWaitFor
		}, "drain.podSelector is required when drain.mode is WaitFor"},
		{"an evicting drain with a pod selector", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Drain = v1alpha1.DrainPolicy{Mode: v1alpha1.DrainEvict, PodSelector: &metav1.LabelSelector{}}
		}, "drain.podSelector is set only when drain.mode is WaitFor"},
		{"a drain mode that does not exist", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Drain.Mode = "Delete"
		}, `spec.drain.mode: Unsupported value: "Delete"`},
		{"five failure-domain keys", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Waves.FailureDomainKeys = []string{"a", "b", "c", "d", "e"}
		}, "spec.waves.failureDomainKeys: Too many"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := stackUpgrade(fmt.Sprintf("invalid-upgrade-%d", i))
			tt.change(u)
			err := c.Create(t.Context(), u)
			if err == nil {
				_ = c.Delete(t.Context(), u)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error = %v, want Invalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestTheAPIServerTakesStackUpgradesAUserWouldWrite(t *testing.T) {
	_, c := testenv.Start(t)
	tests := []struct {
		name   string
		change func(u *v1alpha1.StackUpgrade)
	}{
		{"a driver upgrade with the defaults", func(*v1alpha1.StackUpgrade) {}},
		{"driver, toolkit and agent at once, pinned exactly", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Target = v1alpha1.UpgradeTarget{Driver: "580.95.05", Toolkit: "1.18.0", Agent: "v0.9.0"}
			u.Spec.VersionMatrix = []v1alpha1.VersionConstraint{{Driver: "580.95.05", Toolkit: "1.18.0", Agent: "v0.9.0"}}
		}},
		{"a node image for a preinstalled stack", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Target = v1alpha1.UpgradeTarget{NodeImage: "ami-0abc1234", Driver: "580.95.05"}
		}},
		{"three canaries, racks and zones, a percentage unavailable and a long soak", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Canary.Count = ptr.To(int32(3))
			u.Spec.Soak = &metav1.Duration{Duration: 2 * 3600e9}
			u.Spec.Waves = v1alpha1.WavePolicy{
				FailureDomainKeys: []string{"topology.kubernetes.io/zone", "example.com/rack", "nvidia.com/gpu.clique"},
				MaxPerDomain:      ptr.To(int32(2)), MaxUnavailable: ptr.To(intstr.FromString("10%")),
			}
		}},
		{"canaries by label and a drain that waits for training jobs", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Canary.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"example.com/canary": "true"}}
			u.Spec.Drain = v1alpha1.DrainPolicy{
				Mode:        v1alpha1.DrainWaitFor,
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"job-kind": "training"}},
				Timeout:     &metav1.Duration{Duration: 24 * 3600e9},
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := stackUpgrade(fmt.Sprintf("valid-upgrade-%d", i))
			tt.change(u)
			if err := c.Create(t.Context(), u); err != nil {
				t.Fatalf("creating %+v: %v", u.Spec, err)
			}
			t.Cleanup(func() { _ = c.Delete(t.Context(), u) })
		})
	}
}

func TestTheAPIServerKeepsAStackUpgradesPoolTargetAndAbortFixed(t *testing.T) {
	_, c := testenv.Start(t)
	tests := []struct {
		name   string
		change func(u *v1alpha1.StackUpgrade)
		want   string
	}{
		{"moving the upgrade to another pool", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Pool = "a100"
		}, "spec.pool cannot change"},
		{"changing the target under way", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Target.Driver = "580.95.06"
		}, "spec.target cannot change once the upgrade exists"},
		{"taking an abort back", func(u *v1alpha1.StackUpgrade) {
			u.Spec.Abort = false
		}, "spec.abort cannot be undone"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := stackUpgrade(fmt.Sprintf("fixed-upgrade-%d", i))
			u.Spec.Abort = true
			if err := c.Create(t.Context(), u); err != nil {
				t.Fatalf("creating: %v", err)
			}
			t.Cleanup(func() { _ = c.Delete(t.Context(), u) })
			tt.change(u)
			err := c.Update(t.Context(), u)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error = %v, want Invalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}
