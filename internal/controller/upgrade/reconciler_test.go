package upgrade

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

func TestAStackUpgradeThatCannotRunIsRefusedWithTheReasonBeforeAnyNodeMoves(t *testing.T) {
	c := startController(t)
	pool(t, c, "refuse-a", "570.172.08", "refuse-a-0", "refuse-a-1")
	pool(t, c, "refuse-empty", "570.172.08")
	tests := []struct {
		name    string
		su      func() *v1alpha1.StackUpgrade
		reason  string
		message string
	}{
		{"a target outside the version matrix", func() *v1alpha1.StackUpgrade {
			su := stackUpgrade("refuse-matrix", "refuse-a")
			su.Spec.Target.Driver = "590.10"
			return su
		}, v1alpha1.ReasonUpgradeVersionMatrix, "driver 590.10, toolkit 1.17.8 matches no entry of versionMatrix: [0] driver 590.10 is not >=580.65,<590"},
		{"a pool that does not exist", func() *v1alpha1.StackUpgrade {
			return stackUpgrade("refuse-nopool", "no-such-pool")
		}, v1alpha1.ReasonUpgradePoolNotFound, `StackPool "no-such-pool" does not exist`},
		{"a pool without nodes", func() *v1alpha1.StackUpgrade {
			return stackUpgrade("refuse-nonodes", "refuse-empty")
		}, v1alpha1.ReasonUpgradeNoNodes, "the pool has no member nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			su := tt.su()
			create(t, c, su)
			got := waitAccepted(t, c, su.Name, metav1.ConditionFalse, tt.reason)
			if got.Status.Phase != v1alpha1.UpgradeRefused {
				t.Errorf("phase = %s, want Refused", got.Status.Phase)
			}
			msg := got.Status.Conditions[0].Message
			for _, cond := range got.Status.Conditions {
				if cond.Type == v1alpha1.ConditionUpgradeAccepted {
					msg = cond.Message
				}
			}
			if !strings.Contains(msg, tt.message) {
				t.Errorf("Accepted message = %q, want it to contain %q", msg, tt.message)
			}
			if len(got.Status.NodeStatus) != 0 {
				t.Errorf("a refused upgrade lists nodes: %+v", got.Status.NodeStatus)
			}
		})
	}
}

func TestASecondUpgradeOfTheSamePoolIsRefusedAndNamesTheFirst(t *testing.T) {
	c := startController(t)
	pool(t, c, "overlap", "570.172.08", "overlap-0", "overlap-1")
	create(t, c, stackUpgrade("overlap-first", "overlap"))
	waitAccepted(t, c, "overlap-first", metav1.ConditionTrue, v1alpha1.ReasonUpgradeValid)
	create(t, c, stackUpgrade("overlap-second", "overlap"))
	got := waitAccepted(t, c, "overlap-second", metav1.ConditionFalse, v1alpha1.ReasonUpgradeOverlap)
	want := "StackUpgrade overlap-first is still running on 2 nodes of this pool (overlap-0, overlap-1)"
	for _, cond := range got.Status.Conditions {
		if cond.Type == v1alpha1.ConditionUpgradeAccepted && !strings.Contains(cond.Message, want) {
			t.Errorf("Accepted message = %q, want it to contain %q", cond.Message, want)
		}
	}
}

func TestAnAcceptedUpgradeReportsItsCanaryAndProgress(t *testing.T) {
	c := startController(t)
	pool(t, c, "plan", "570.172.08", "plan-0", "plan-1", "plan-2")
	create(t, c, stackUpgrade("plan-580", "plan"))
	got := waitPhase(t, c, "plan-580", v1alpha1.UpgradeCanary, metav1.ConditionTrue, v1alpha1.ReasonUpgradeValid)
	if got.Status.Phase != v1alpha1.UpgradeCanary || got.Status.Progress != "0/3" || got.Status.Nodes != 3 {
		t.Errorf("phase %s, progress %q, nodes %d; want Canary, 0/3, 3", got.Status.Phase, got.Status.Progress, got.Status.Nodes)
	}
	if got.Status.From.Driver != "570.172.08" || got.Status.From.Toolkit != "1.17.8" {
		t.Errorf("from = %+v, want the pool's driver 570.172.08 and toolkit 1.17.8", got.Status.From)
	}
	if len(got.Status.NodeStatus) != 1 || got.Status.NodeStatus[0].Name != "plan-0" || !got.Status.NodeStatus[0].Canary {
		t.Errorf("node status = %+v, want plan-0 alone, as the canary", got.Status.NodeStatus)
	}
}

func TestAnUpgradeWhoseNodesAlreadyRunTheTargetIsComplete(t *testing.T) {
	c := startController(t)
	pool(t, c, "done", "580.95.05", "done-0", "done-1")
	create(t, c, stackUpgrade("done-580", "done"))
	got := waitPhase(t, c, "done-580", v1alpha1.UpgradeComplete, metav1.ConditionTrue, v1alpha1.ReasonUpgradeValid)
	if got.Status.Phase != v1alpha1.UpgradeComplete || got.Status.Progress != "2/2" {
		t.Errorf("phase %s, progress %q; want Complete, 2/2", got.Status.Phase, got.Status.Progress)
	}
}
