package upgrade

import (
	"fmt"
	"testing"
	"time"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/upgrade"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestTheStatusKeepsFailedAndInProgressNodesFirstWithinItsCap(t *testing.T) {
	su := stackUpgrade("cap", "p")
	v := view{entries: map[string]v1alpha1.UpgradeNodeStatus{}}
	for i := range 300 {
		name := fmt.Sprintf("node-%03d", i)
		phase, state := v1alpha1.NodeUpgradeDone, upgrade.Done
		switch i {
		case 299:
			phase, state = v1alpha1.NodeUpgradeFailed, upgrade.Failed
		case 298:
			phase, state = v1alpha1.NodeUpgradeVerifying, upgrade.InProgress
		}
		v.entries[name] = v1alpha1.UpgradeNodeStatus{Name: name, Phase: phase}
		v.nodes = append(v.nodes, upgrade.Node{Name: name, State: state})
	}
	v.decision = upgrade.Decide(v.nodes, upgrade.Spec{Target: upgrade.Versions{Driver: "580.95.05"}}, t0)
	st, _ := statusOf(su, v)
	if len(st.NodeStatus) != v1alpha1.MaxUpgradeNodeStatus || st.NodeStatusOmitted != 300-v1alpha1.MaxUpgradeNodeStatus {
		t.Fatalf("%d entries, %d omitted; want %d and %d", len(st.NodeStatus), st.NodeStatusOmitted, v1alpha1.MaxUpgradeNodeStatus, 300-v1alpha1.MaxUpgradeNodeStatus)
	}
	if st.NodeStatus[0].Name != "node-299" || st.NodeStatus[1].Name != "node-298" || st.NodeStatus[2].Name != "node-000" {
		t.Errorf("first entries %s, %s, %s; want the failed node-299, the in-progress node-298, then node-000",
			st.NodeStatus[0].Name, st.NodeStatus[1].Name, st.NodeStatus[2].Name)
	}
	if st.Upgraded != 298 || st.Failed != 1 || st.InProgress != 1 || st.Progress != "298/300" || st.Phase != v1alpha1.UpgradeHalted {
		t.Errorf("counts %d upgraded, %d failed, %d in progress, %q, phase %s", st.Upgraded, st.Failed, st.InProgress, st.Progress, st.Phase)
	}
}
