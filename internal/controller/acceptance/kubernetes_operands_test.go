package acceptance

import (
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// operandDS is a DaemonSet in ns with the given labels, node selector and tolerations.
func operandDS(ns, name string, lbls, selector map[string]string, tol ...corev1.Toleration) appsv1.DaemonSet {
	return appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: lbls},
			Spec:       corev1.PodSpec{NodeSelector: selector, Tolerations: tol},
		}},
	}
}

var (
	tolerateHolds = []corev1.Toleration{
		{Key: v1alpha1.TaintNotAccepted, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: v1alpha1.TaintUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	tolerateAll = corev1.Toleration{Operator: corev1.TolerationOpExists}
)

func heldNode() *corev1.Node {
	n := kubeNode("gpu-1", 8)
	n.Labels["nvidia.com/gpu.present"] = "true"
	n.Labels[v1alpha1.LabelStackPool] = "h100"
	n.Spec.Taints = []corev1.Taint{
		{Key: v1alpha1.TaintNotAccepted, Effect: corev1.TaintEffectNoSchedule},
		{Key: v1alpha1.TaintUnschedulable, Value: "not-accepted", Effect: corev1.TaintEffectNoSchedule},
	}
	return n
}

func TestTheOperandsCheck(t *testing.T) {
	gpuOperatorDriver := func(tol ...corev1.Toleration) appsv1.DaemonSet {
		return operandDS("gpu-operator", "nvidia-driver-daemonset", map[string]string{"app": "nvidia-driver-daemonset"},
			map[string]string{"nvidia.com/gpu.deploy.driver": "true"}, tol...)
	}
	ourDriver := func(tol ...corev1.Toleration) appsv1.DaemonSet {
		return operandDS("gpunode-system", "gpunode-h100-driver", map[string]string{v1alpha1.LabelStackPool: "h100", "app.kubernetes.io/component": "driver"},
			map[string]string{v1alpha1.LabelStackPool: "h100"}, tol...)
	}
	for _, tc := range []struct {
		name   string
		node   func(n *corev1.Node)
		ds     []appsv1.DaemonSet
		err    error
		status v1alpha1.CheckStatus
		says   []string
	}{
		{"operands that tolerate gpunode's hold taints pass", func(n *corev1.Node) { n.Labels["nvidia.com/gpu.deploy.driver"] = "true" },
			[]appsv1.DaemonSet{ourDriver(tolerateHolds...), gpuOperatorDriver(tolerateAll)}, nil, statusPass, []string{"2 operand DaemonSets"}},
		{"a GPU Operator driver without the tolerations is named: it cannot schedule on the held node",
			func(n *corev1.Node) { n.Labels["nvidia.com/gpu.deploy.driver"] = "true" },
			[]appsv1.DaemonSet{ourDriver(tolerateHolds...), gpuOperatorDriver()}, nil, statusFail,
			[]string{"gpu-operator/nvidia-driver-daemonset (GPU Operator) does not tolerate gpunode.dev/not-accepted:NoSchedule, gpunode.dev/unschedulable:NoSchedule"}},
		{"a pool's operand tolerating only one hold taint is named with the other",
			nil, []appsv1.DaemonSet{ourDriver(tolerateHolds[0])}, nil, statusFail,
			[]string{"gpunode-system/gpunode-h100-driver (gpunode) does not tolerate gpunode.dev/unschedulable:NoSchedule"}},
		{"an operand whose selector does not take the node is not judged", nil,
			[]appsv1.DaemonSet{gpuOperatorDriver()}, nil, statusSkip, []string{"no operand DaemonSet"}},
		{"a DaemonSet that is no GPU operand is not judged", nil,
			[]appsv1.DaemonSet{operandDS("kube-system", "kube-proxy", map[string]string{"k8s-app": "kube-proxy"}, nil)}, nil, statusSkip, nil},
		{"a GPU Operator operand found by its nvidia.com owner is judged", nil, func() []appsv1.DaemonSet {
			ds := operandDS("gpu-operator", "custom-validator", nil, nil)
			ds.OwnerReferences = []metav1.OwnerReference{{APIVersion: "nvidia.com/v1", Kind: "ClusterPolicy", Name: "cluster-policy"}}
			return []appsv1.DaemonSet{ds}
		}(), nil, statusFail, []string{"custom-validator (GPU Operator)"}},
		{"a node without hold taints keeps no operand off", func(n *corev1.Node) { n.Spec.Taints = nil },
			[]appsv1.DaemonSet{ourDriver()}, nil, statusPass, []string{"1 operand DaemonSets"}},
		{"a required node affinity that excludes the node is not judged", nil, func() []appsv1.DaemonSet {
			ds := ourDriver()
			ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "nvidia.com/gpu.present", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"true"}}},
				}}}}}
			return []appsv1.DaemonSet{ds}
		}(), nil, statusSkip, nil},
		{"DaemonSets that could not be read skip with the reason", nil, nil, errors.New("forbidden"), statusSkip, []string{"forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := heldNode()
			if tc.node != nil {
				tc.node(n)
			}
			v := checkOperands(KubernetesFacts{Node: n, DaemonSets: tc.ds, DaemonSetsErr: tc.err})
			if v.status != tc.status {
				t.Fatalf("status %s (%s), want %s", v.status, v.message, tc.status)
			}
			for _, s := range tc.says {
				if !strings.Contains(v.message, s) {
					t.Errorf("message %q does not say %q", v.message, s)
				}
			}
		})
	}
}

func TestTheOperandsCheckRunsOnEveryNode(t *testing.T) {
	for _, api := range []string{v1alpha1.GPUAPIDevicePlugin, v1alpha1.GPUAPIDRA} {
		gn := &v1alpha1.GPUNode{Status: v1alpha1.GPUNodeStatus{GPUAPI: api}}
		found := false
		for _, c := range KubernetesChecks(KubernetesFacts{Node: heldNode(), GPUNode: gn}) {
			if c.ID == CheckOperands {
				found = true
			}
		}
		if !found {
			t.Errorf("%s node: no %s check", api, CheckOperands)
		}
	}
}
