package acceptance

import (
	"fmt"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

const (
	h100      = "NVIDIA H100 80GB HBM3"
	h100Class = "h100-sxm-80gb"
)

// at is a fixed time, to the second (the API keeps times to the second).
var at = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// policy returns a policy expecting gpus H100s of h100Class, selecting nodes by selector.
func policy(name string, priority int32, selector map[string]string, gpus int32) *v1alpha1.GPUNodePolicy {
	return &v1alpha1.GPUNodePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.GPUNodePolicySpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: selector},
			Priority:     priority,
			Classes:      []v1alpha1.ClassExpectation{{Class: h100Class, GPUs: gpus, Model: h100, MinMemoryMiB: 80000}},
		},
	}
}

// gpuNode returns a GPUNode whose agent published gpus H100s and driver 580.95.05.
func gpuNode(name string, gpus int) *v1alpha1.GPUNode {
	gn := &v1alpha1.GPUNode{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.GPUNodeSpec{NodeName: name},
	}
	gn.Status = v1alpha1.GPUNodeStatus{
		AcceleratorClass: h100Class, GPUCount: int32(gpus), Health: v1alpha1.HealthHealthy,
		Inventory: v1alpha1.Inventory{GPUs: gpuInfos(gpus)},
		Versions:  v1alpha1.Versions{Driver: "580.95.05", CUDA: "13.0"},
	}
	return gn
}

func gpuInfos(n int) []v1alpha1.GPUInfo {
	out := make([]v1alpha1.GPUInfo, n)
	for i := range out {
		out[i] = v1alpha1.GPUInfo{Index: int32(i), UUID: fmt.Sprintf("GPU-%04d", i), Model: h100, MemoryMiB: 81559}
	}
	return out
}

// record returns the agent's record for node answering generation gen with gpus H100s.
func record(name, node string, gen int64, result v1alpha1.AcceptanceResult, gpus int) *v1alpha1.AcceptanceRecord {
	r := &v1alpha1.AcceptanceRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.AcceptanceRecordSpec{
			Node: node, AcceptanceGeneration: gen, Result: result,
			StartedAt: metav1.NewTime(at), FinishedAt: metav1.NewTime(at.Add(4 * time.Second)),
			Policy:  v1alpha1.PolicyRef{Name: "fleet", SHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
			Backend: "sim", Layers: []v1alpha1.Layer{"host", "hardware"},
			Summary: v1alpha1.CheckSummary{Pass: 10},
			Checks:  []v1alpha1.Check{{ID: "hardware.gpu-count", Layer: "hardware", Status: "pass", Message: "as found"}},
		},
	}
	for i := range gpus {
		r.Spec.GPUs = append(r.Spec.GPUs, v1alpha1.RecordGPU{
			Index: int32(i), UUID: fmt.Sprintf("GPU-%04d", i), Model: h100, MemoryMiB: 81559, Status: "pass",
		})
	}
	if result == v1alpha1.AcceptanceFailed {
		r.Spec.Summary.Fail = 1
		r.Spec.Checks = append(r.Spec.Checks, v1alpha1.Check{ID: "hardware.ecc", Layer: "hardware", Status: "fail", Message: "ECC disabled on GPU 2"})
	}
	tv := reflect.ValueOf(&r.Spec.Template).Elem()
	for i := range tv.NumField() {
		tv.Field(i).Set(reflect.ValueOf(v1alpha1.TemplateField{Value: tv.Type().Field(i).Name}))
	}
	return r
}

// answered marks gn as having answered its current request with record name.
func answered(gn *v1alpha1.GPUNode, name string, result v1alpha1.AcceptanceResult) *v1alpha1.GPUNode {
	gn.Status.LastAcceptance = &v1alpha1.AcceptanceSummary{
		RecordName: name, Generation: gn.Spec.AcceptanceGeneration, Result: result, Time: metav1.NewTime(at),
	}
	return gn
}
