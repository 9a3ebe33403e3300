package v1alpha1_test

import (
	"os"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

// One API server for the package's integration tests, stopped after the last test.
func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// at is a fixed time, to the second (the API keeps times to the second).
var at = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

func gpuNode(name string) *v1alpha1.GPUNode {
	return &v1alpha1.GPUNode{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.GPUNodeSpec{NodeName: name},
	}
}

func gpuNodeStatus() v1alpha1.GPUNodeStatus {
	return v1alpha1.GPUNodeStatus{
		Phase: v1alpha1.PhaseAccepting, AcceleratorClass: "h100-sxm-80gb", GPUCount: 1,
		Health: v1alpha1.HealthHealthy,
		Inventory: v1alpha1.Inventory{GPUs: []v1alpha1.GPUInfo{{
			Index: 0, UUID: "GPU-0000", Serial: "1650000000001", Model: "NVIDIA H100 80GB HBM3",
			MemoryMiB: 81559, PCIBusID: "00000000:18:00.0", PCIe: "Gen5 x16", VBIOS: "96.00.99.00.01",
			NVLinks: &v1alpha1.NVLinkCount{Total: 18, Active: 18},
		}}},
		Versions: v1alpha1.Versions{Kernel: "6.8.0-60-generic", Driver: "580.95.05", CUDA: "13.0", Containerd: "2.1.4", Kubelet: "v1.37.2"},
		GPUHealth: []v1alpha1.GPUHealth{{
			Index: 0, UUID: "GPU-0000", Health: v1alpha1.HealthHealthy, Action: "none", Since: at,
		}},
		Holds: []v1alpha1.Hold{{
			Owner: v1alpha1.HoldOwnerAcceptance, Reason: "not-accepted", Message: "acceptance has not passed yet", Since: at,
		}},
		LastAcceptance: &v1alpha1.AcceptanceSummary{
			RecordName: "node-a-1", Generation: 1, Result: v1alpha1.AcceptancePassed, Time: at,
			Summary: v1alpha1.CheckSummary{Pass: 30, Skip: 2},
		},
		Conditions: []metav1.Condition{{
			Type: v1alpha1.ConditionAccepted, Status: metav1.ConditionTrue, Reason: "AcceptancePassed",
			Message: "acceptance passed", LastTransitionTime: at,
		}},
		Agent: &v1alpha1.AgentStatus{HeartbeatTime: at},
	}
}

func acceptanceRecord(name string) *v1alpha1.AcceptanceRecord {
	r := &v1alpha1.AcceptanceRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.AcceptanceRecordSpec{
			Node: "node-a", AcceptanceGeneration: 1, Result: v1alpha1.AcceptancePassed,
			StartedAt: at, FinishedAt: metav1.NewTime(at.Add(4 * time.Second)), DurationMilliseconds: 3900,
			Tool:    v1alpha1.ToolRef{Version: "v0.1.0", Commit: "abc123"},
			Policy:  v1alpha1.PolicyRef{Name: "default", Source: "built-in", SHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
			Backend: "sim", Layers: []v1alpha1.Layer{"host", "hardware"},
			GPUs: []v1alpha1.RecordGPU{{
				Index: 0, UUID: "GPU-0000", Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559, Status: "pass",
			}},
			Summary: v1alpha1.CheckSummary{Pass: 1},
			Checks: []v1alpha1.Check{{
				ID: "hardware.gpu-count", Layer: "hardware", Status: "pass", Message: "1 GPU, as expected",
				Evidence: []string{"GPU 0 (GPU-0000): NVIDIA H100 80GB HBM3"},
			}},
			Stack: v1alpha1.RecordStack{DriverVersion: "580.95.05", CUDAVersion: "13.0"},
			Performance: []v1alpha1.ModelPerformance{{Model: "NVIDIA H100 80GB HBM3", Metrics: []v1alpha1.MetricValue{
				{Name: "hbm-copy", Value: 2950.25, Lowest: 2950.25, Unit: "GB/s", GPUs: 1},
			}}},
		},
	}
	// Every line of the template has a value.
	tv := reflect.ValueOf(&r.Spec.Template).Elem()
	for i := range tv.NumField() {
		tv.Field(i).Set(reflect.ValueOf(v1alpha1.TemplateField{Value: tv.Type().Field(i).Name}))
	}
	return r
}
