package stack

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

const (
	driverImage   = "nvcr.io/nvidia/driver:580.95.05-ubuntu24.04"
	toolkitImage  = "nvcr.io/nvidia/k8s/container-toolkit"
	driverWanted  = "580.95.05"
	toolkitWanted = "1.18.0"
)

// containerPool is a pool of the driver and toolkit as containers, selecting pool=<name>.
func containerPool(name string) *v1alpha1.StackPool {
	return &v1alpha1.StackPool{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: v1alpha1.StackPoolSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": name}},
			Driver:       v1alpha1.DriverOperand{Source: v1alpha1.SourceContainer, Image: driverImage, Version: driverWanted},
			Toolkit:      v1alpha1.ToolkitOperand{Source: v1alpha1.SourceContainer, Image: toolkitImage, Version: toolkitWanted},
		},
	}
}

// preinstalledPool is a pool whose driver and toolkit are the node image's.
func preinstalledPool(name string) *v1alpha1.StackPool {
	p := containerPool(name)
	p.Spec.Driver = v1alpha1.DriverOperand{Source: v1alpha1.SourcePreinstalled, Version: driverWanted}
	p.Spec.Toolkit = v1alpha1.ToolkitOperand{Source: v1alpha1.SourcePreinstalled}
	return p
}

// reportingGPUNode is a GPUNode whose agent reports NVML's driver and the toolkit checks.
func reportingGPUNode(name, driver string, toolkitReady bool) *v1alpha1.GPUNode {
	gn := &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.GPUNodeSpec{NodeName: name}}
	gn.Status.Versions.Driver = driver
	gn.Status.Stack = &v1alpha1.StackStatus{
		Driver:  v1alpha1.OperandReadiness{Ready: driver != "", Version: driver},
		Toolkit: v1alpha1.OperandReadiness{Ready: toolkitReady},
	}
	if !toolkitReady {
		gn.Status.Stack.Toolkit.Message = "containerd has no nvidia runtime"
	}
	return gn
}

// runningPod is pool's pod of component on node, at version, Running and Ready.
func runningPod(pool, component, node, version string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: DaemonSetName(pool, component) + "-" + node, Namespace: "gpunode-system", Labels: map[string]string{
			LabelComponent: component, v1alpha1.LabelStackPool: pool, v1alpha1.LabelOperandVersion: version,
		}},
		Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
}
