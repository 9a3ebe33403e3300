package upgrade

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/upgrade"
)

// poolVersions is what the pool's spec runs now: the versions the target leaves unset keep
// them.
func poolVersions(p *v1alpha1.StackPool) upgrade.Versions {
	return upgrade.Versions{Driver: p.Spec.Driver.Version, Toolkit: p.Spec.Toolkit.Version}
}

// nodeOf is one member as the planner sees it: its labels and holds from the Node's
// metadata, the versions its agent reports and remediation's claim from its GPUNode (nil:
// none yet), its progress from the upgrade's status entry (nil: none).
func nodeOf(node *metav1.PartialObjectMetadata, gn *v1alpha1.GPUNode, entry *v1alpha1.UpgradeNodeStatus) upgrade.Node {
	n := upgrade.Node{Name: node.Name, Labels: node.Labels, State: upgrade.Pending}
	holds, err := nodeops.ParseHolds(node.Name, node.Annotations[v1alpha1.AnnotationHolds])
	if err != nil {
		n.HeldByOthers = true // a holds annotation nobody can read: treat the node as held
	}
	for _, h := range holds {
		if h.Owner != v1alpha1.HoldOwnerUpgrade {
			n.HeldByOthers = true
		}
	}
	if gn != nil {
		n.Running.Driver = gn.Status.Versions.Driver
		if st := gn.Status.Stack; st != nil {
			n.Running.Toolkit = st.Toolkit.Version
		}
		n.InRemediation = gn.Status.Remediation != nil && gn.Status.Remediation.Phase != ""
	}
	if entry != nil {
		n.Canary, n.Wave, n.Message = entry.Canary, int(entry.Wave), entry.Message
		switch entry.Phase {
		case v1alpha1.NodeUpgradeDone:
			n.State = upgrade.Done
		case v1alpha1.NodeUpgradeFailed:
			n.State = upgrade.Failed
		case v1alpha1.NodeUpgradeDraining, v1alpha1.NodeUpgradeUpgrading, v1alpha1.NodeUpgradeVerifying:
			n.State = upgrade.InProgress
		}
		if entry.FinishedAt != nil {
			n.FinishedAt = entry.FinishedAt.Time
		}
	}
	return n
}
