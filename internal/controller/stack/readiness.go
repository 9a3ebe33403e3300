package stack

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// Operands' labels.
const (
	// LabelComponent is app.kubernetes.io/component: "driver" or "toolkit" on gpunode's
	// operand DaemonSets and pods.
	LabelComponent = "app.kubernetes.io/component"
	// ComponentDriver and ComponentToolkit are LabelComponent's values.
	ComponentDriver  = "driver"
	ComponentToolkit = "toolkit"
	// LabelGPUOperatorApp and GPUOperatorDriverApp pick the GPU Operator's driver pods.
	LabelGPUOperatorApp  = "app"
	GPUOperatorDriverApp = "nvidia-driver-daemonset"
)

// NodeFacts is what the readiness of one member node is decided from.
type NodeFacts struct {
	// Name is the Node's name.
	Name string
	// GPUNode is the node's GPUNode; nil when the agent has not created it.
	GPUNode *v1alpha1.GPUNode
	// Pods are the operand pods on the node: gpunode's of every pool (labelled
	// gpunode.dev/stack-pool) and the GPU Operator's driver pods.
	Pods []corev1.Pod
}

// Readiness decides whether pool p's driver, toolkit and agent are ready on a member node, with
// the operands' sources after the GPU Operator (Effective):
//   - driver, Container: the pool's driver pod on the node is Running and Ready with the
//     wanted version label, and NVML reports the wanted version (GPUNode
//     status.versions.driver, the agent's report); Preinstalled: NVML's version alone;
//     GPUOperator: the GPU Operator's driver pod on the node is Ready or NVML reports a
//     version, and the wanted version when the pool names one;
//   - toolkit: the agent's checks of the runtime config and CDI spec pass
//     (status.stack.toolkit.ready), and, Container, the pool's toolkit pod on the node is
//     Running and Ready with the wanted version label;
//   - agent (agentReadiness): Chart, ready; Container, the pool's agent pod and the
//     version the agent reports;
//   - any operand: not ready while another pool's pod of it is still on the node (the
//     node moved from that pool).
func Readiness(p *v1alpha1.StackPool, src Sources, f NodeFacts) v1alpha1.StackNodeStatus {
	return v1alpha1.StackNodeStatus{Name: f.Name, Driver: driverReadiness(p, src, f), Toolkit: toolkitReadiness(p, src, f),
		Agent: agentReadiness(p, f)}
}

func driverReadiness(p *v1alpha1.StackPool, src Sources, f NodeFacts) v1alpha1.NodeOperandStatus {
	wanted := p.Spec.Driver.Version
	st := v1alpha1.NodeOperandStatus{Wanted: wanted}
	nvml := ""
	if f.GPUNode != nil {
		nvml = f.GPUNode.Status.Versions.Driver
	}
	st.Running = nvml
	if msg := otherPoolPod(p, f.Pods, ComponentDriver); msg != "" {
		return notReady(st, "driver: "+msg)
	}
	switch src.Driver {
	case v1alpha1.SourceContainer:
		if msg := podProblem(p, f.Pods, ComponentDriver, wanted); msg != "" {
			return notReady(st, "driver: "+msg)
		}
	case v1alpha1.SourceGPUOperator:
		if nvml == "" && !gpuOperatorDriverReady(f.Pods) {
			return notReady(st, "driver: neither the GPU Operator's driver pod ("+LabelGPUOperatorApp+"="+GPUOperatorDriverApp+
				") is ready on the node nor does NVML report a version"+agentSays(f, false))
		}
		if wanted == "" || nvml == wanted {
			st.Ready = true
			return st
		}
	}
	switch {
	case f.GPUNode == nil:
		return notReady(st, "driver: the node's GPUNode does not exist yet (its agent has not reported)")
	case nvml == "":
		return notReady(st, "driver: NVML reports no driver version"+agentSays(f, false))
	case nvml != wanted:
		return notReady(st, fmt.Sprintf("driver: NVML reports %s, pool wants %s", nvml, wanted))
	}
	st.Ready = true
	return st
}

func toolkitReadiness(p *v1alpha1.StackPool, src Sources, f NodeFacts) v1alpha1.NodeOperandStatus {
	wanted := p.Spec.Toolkit.Version
	st := v1alpha1.NodeOperandStatus{Wanted: wanted}
	if f.GPUNode != nil && f.GPUNode.Status.Stack != nil {
		st.Running = f.GPUNode.Status.Stack.Toolkit.Version
	}
	if msg := otherPoolPod(p, f.Pods, ComponentToolkit); msg != "" {
		return notReady(st, "toolkit: "+msg)
	}
	if src.Toolkit == v1alpha1.SourceContainer {
		pod := operandPod(p, f.Pods, ComponentToolkit)
		if pod != nil {
			st.Running = pod.Labels[v1alpha1.LabelOperandVersion]
		}
		if msg := podProblem(p, f.Pods, ComponentToolkit, wanted); msg != "" {
			return notReady(st, "toolkit: "+msg)
		}
	}
	switch {
	case f.GPUNode == nil:
		return notReady(st, "toolkit: the node's GPUNode does not exist yet (its agent has not reported)")
	case f.GPUNode.Status.Stack == nil:
		return notReady(st, "toolkit: the agent has not reported the runtime config and CDI checks yet")
	case !f.GPUNode.Status.Stack.Toolkit.Ready:
		return notReady(st, "toolkit: the agent's runtime config and CDI checks fail"+agentSays(f, true))
	}
	st.Ready = true
	return st
}

// agentSays is the agent's message on the operand, as ": <message>", or "".
func agentSays(f NodeFacts, toolkit bool) string {
	if f.GPUNode == nil || f.GPUNode.Status.Stack == nil {
		return ""
	}
	r := f.GPUNode.Status.Stack.Driver
	if toolkit {
		r = f.GPUNode.Status.Stack.Toolkit
	}
	if r.Message == "" {
		return ""
	}
	return ": " + r.Message
}

// operandPod is pool p's pod of component on the node: the one not being deleted, else any.
func operandPod(p *v1alpha1.StackPool, pods []corev1.Pod, component string) *corev1.Pod {
	var found *corev1.Pod
	for i := range pods {
		pod := &pods[i]
		if pod.Labels[v1alpha1.LabelStackPool] != p.Name || pod.Labels[LabelComponent] != component {
			continue
		}
		if pod.DeletionTimestamp == nil {
			return pod
		}
		found = pod
	}
	return found
}

// podProblem says what keeps pool p's pod of component from counting as ready; "" when
// nothing does.
func podProblem(p *v1alpha1.StackPool, pods []corev1.Pod, component, wanted string) string {
	pod := operandPod(p, pods, component)
	switch {
	case pod == nil:
		return fmt.Sprintf("no pod of DaemonSet %s on the node yet", DaemonSetName(p.Name, component))
	case pod.DeletionTimestamp != nil:
		return fmt.Sprintf("pod %s is being deleted", pod.Name)
	case pod.Status.Phase != corev1.PodRunning:
		return fmt.Sprintf("pod %s is %s%s", pod.Name, phaseOf(pod), waitingReason(pod))
	case !podReady(pod):
		return fmt.Sprintf("pod %s is running but not ready%s", pod.Name, waitingReason(pod))
	}
	if v := pod.Labels[v1alpha1.LabelOperandVersion]; v != wanted {
		return fmt.Sprintf("pod %s runs version %s, pool wants %s (updateStrategy OnDelete: the pod changes when it is deleted)", pod.Name, v, wanted)
	}
	return ""
}

func phaseOf(pod *corev1.Pod) string {
	if pod.Status.Phase == "" {
		return string(corev1.PodPending)
	}
	return string(pod.Status.Phase)
}

// waitingReason is the first container's waiting reason (ImagePullBackOff,
// CrashLoopBackOff), as " (<reason>)", or "".
func waitingReason(pod *corev1.Pod) string {
	for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			return " (" + cs.State.Waiting.Reason + ")"
		}
	}
	return ""
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func gpuOperatorDriverReady(pods []corev1.Pod) bool {
	for i := range pods {
		pod := &pods[i]
		if pod.Labels[LabelGPUOperatorApp] == GPUOperatorDriverApp && pod.DeletionTimestamp == nil &&
			pod.Status.Phase == corev1.PodRunning && podReady(pod) {
			return true
		}
	}
	return false
}

func notReady(st v1alpha1.NodeOperandStatus, msg string) v1alpha1.NodeOperandStatus {
	st.Ready, st.Message = false, truncate(msg, 1024)
	return st
}

// Ready reports whether the driver, the toolkit and the agent are ready.
func Ready(st v1alpha1.StackNodeStatus) bool {
	return st.Driver.Ready && st.Toolkit.Ready && st.Agent.Ready
}

// NotReadyReason is the reason of the stack hold of a member node that is not ready.
func NotReadyReason(st v1alpha1.StackNodeStatus) string {
	var parts []string
	for _, o := range []v1alpha1.NodeOperandStatus{st.Driver, st.Toolkit, st.Agent} {
		if !o.Ready {
			parts = append(parts, o.Message)
		}
	}
	return v1alpha1.HoldReasonStackNotReady + ": " + strings.Join(parts, "; ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
