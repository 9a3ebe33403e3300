package acceptance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// The RBAC the operands check uses: every namespace's DaemonSets (the GPU Operator's live
// in its own namespace), read when a record is judged.
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=list

// CheckOperands is the L2 check that every operand DaemonSet meant for the node can run
// on it while gpunode holds it.
const CheckOperands = "kubernetes.operands"

// gpuOperatorApps are the app labels of the GPU Operator's operand DaemonSets.
var gpuOperatorApps = []string{
	"nvidia-driver-daemonset", "nvidia-container-toolkit-daemonset", "nvidia-device-plugin-daemonset",
	"gpu-feature-discovery", "nvidia-dcgm-exporter", "nvidia-dcgm", "nvidia-operator-validator",
	"nvidia-mig-manager", "nvidia-vgpu-manager-daemonset", "nvidia-vgpu-device-manager",
	"nvidia-sandbox-validator", "nvidia-cc-manager", "nvidia-vfio-manager",
}

// operandOwner says whose operand a DaemonSet is: "gpunode" (a StackPool's, or the chart's
// agent), "GPU Operator" (owned by a nvidia.com object, an operand app label, or selecting
// nodes by a nvidia.com/gpu.deploy.* label), or "" when it is no GPU operand.
func operandOwner(ds *appsv1.DaemonSet) string {
	l := ds.Labels
	if l[v1alpha1.LabelStackPool] != "" || l["app.kubernetes.io/name"] == "gpunode" {
		return "gpunode"
	}
	for _, o := range ds.OwnerReferences {
		if strings.HasPrefix(o.APIVersion, "nvidia.com/") {
			return "GPU Operator"
		}
	}
	if slices.Contains(gpuOperatorApps, l["app"]) || slices.Contains(gpuOperatorApps, ds.Spec.Template.Labels["app"]) {
		return "GPU Operator"
	}
	for k := range ds.Spec.Template.Spec.NodeSelector {
		if strings.HasPrefix(k, "nvidia.com/gpu.deploy.") {
			return "GPU Operator"
		}
	}
	return ""
}

// selectsNode reports whether the pod template's node selector and required node affinity
// admit the node (what the DaemonSet controller asks before the taints).
func selectsNode(spec *corev1.PodSpec, node *corev1.Node) bool {
	for k, v := range spec.NodeSelector {
		if node.Labels[k] != v {
			return false
		}
	}
	a := spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if termMatches(term, node) {
			return true
		}
	}
	return false
}

var nodeSelectorOps = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn: selection.In, corev1.NodeSelectorOpNotIn: selection.NotIn,
	corev1.NodeSelectorOpExists: selection.Exists, corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt: selection.GreaterThan, corev1.NodeSelectorOpLt: selection.LessThan,
}

// termMatches: every expression of the term matches the node's labels (and a
// metadata.name field, the only node field a DaemonSet's pods are bound by).
func termMatches(term corev1.NodeSelectorTerm, node *corev1.Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false // an empty term matches nothing
	}
	for _, e := range term.MatchExpressions {
		req, err := labels.NewRequirement(e.Key, nodeSelectorOps[e.Operator], e.Values)
		if err != nil || !req.Matches(labels.Set(node.Labels)) {
			return false
		}
	}
	for _, f := range term.MatchFields {
		if f.Key != "metadata.name" {
			return false
		}
		in := slices.Contains(f.Values, node.Name)
		if (f.Operator == corev1.NodeSelectorOpIn) != in {
			return false
		}
	}
	return true
}

// holdTaints are the node's gpunode taints that keep pods off (NoSchedule, NoExecute).
func holdTaints(node *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range node.Spec.Taints {
		if (t.Key == v1alpha1.TaintNotAccepted || t.Key == v1alpha1.TaintUnschedulable) && t.Effect != corev1.TaintEffectPreferNoSchedule {
			out = append(out, t)
		}
	}
	return out
}

// untolerated are the taints none of tolerations tolerates.
func untolerated(taints []corev1.Taint, tolerations []corev1.Toleration) []string {
	var out []string
	for i := range taints {
		ok := false
		for j := range tolerations {
			if tolerations[j].ToleratesTaint(logr.Discard(), &taints[i], false) {
				ok = true
				break
			}
		}
		if !ok {
			out = append(out, fmt.Sprintf("%s:%s", taints[i].Key, taints[i].Effect))
		}
	}
	return out
}

// checkOperands: no operand DaemonSet that selects the node is kept off it by a gpunode
// hold taint it does not tolerate (a driver that cannot run on a held node keeps it held).
func checkOperands(f KubernetesFacts) verdict {
	if f.DaemonSetsErr != nil {
		return judged(statusSkip, nil, "the DaemonSets could not be read: %v", f.DaemonSetsErr)
	}
	var evidence, blocked []string
	for i := range f.DaemonSets {
		ds := &f.DaemonSets[i]
		who := operandOwner(ds)
		if who == "" || !selectsNode(&ds.Spec.Template.Spec, f.Node) {
			continue
		}
		name := ds.Namespace + "/" + ds.Name
		if missing := untolerated(holdTaints(f.Node), ds.Spec.Template.Spec.Tolerations); len(missing) > 0 {
			line := fmt.Sprintf("DaemonSet %s (%s) does not tolerate %s: its pod cannot schedule on the node while gpunode holds it",
				name, who, strings.Join(missing, ", "))
			blocked = append(blocked, line)
			evidence = append(evidence, line)
			continue
		}
		evidence = append(evidence, fmt.Sprintf("DaemonSet %s (%s) tolerates gpunode's hold taints", name, who))
	}
	switch {
	case len(blocked) > 0:
		return judged(statusFail, evidence, "%s", strings.Join(blocked, "; "))
	case len(evidence) == 0:
		return judged(statusSkip, nil, "no operand DaemonSet (gpunode's or the GPU Operator's) selects the node")
	}
	return judged(statusPass, evidence, "%d operand DaemonSets select the node and tolerate gpunode's hold taints", len(evidence))
}
