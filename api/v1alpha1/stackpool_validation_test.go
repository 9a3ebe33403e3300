package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

// stackPool is a valid pool: the driver and the toolkit as containers.
func stackPool(name string) *v1alpha1.StackPool {
	return &v1alpha1.StackPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.StackPoolSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "h100"}},
			Driver:       v1alpha1.DriverOperand{Source: v1alpha1.SourceContainer, Image: "nvcr.io/nvidia/driver:580.95.05-ubuntu24.04", Version: "580.95.05"},
			Toolkit:      v1alpha1.ToolkitOperand{Source: v1alpha1.SourceContainer, Image: "nvcr.io/nvidia/k8s/container-toolkit", Version: "1.18.0"},
		},
	}
}

func TestTheAPIServerRefusesStackPoolsThatCannotBeDeployed(t *testing.T) {
	_, c := testenv.Start(t)
	tests := []struct {
		name   string
		change func(p *v1alpha1.StackPool)
		want   string
	}{
		{"a pool that selects every node", func(p *v1alpha1.StackPool) {
			p.Spec.NodeSelector = metav1.LabelSelector{}
		}, "nodeSelector must name at least one label: a pool never selects every node"},
		{"a driver container without an image", func(p *v1alpha1.StackPool) {
			p.Spec.Driver.Image = ""
		}, "driver.image is required when driver.source is Container"},
		{"a preinstalled driver with an image", func(p *v1alpha1.StackPool) {
			p.Spec.Driver.Source = v1alpha1.SourcePreinstalled
		}, "driver.image is set only when driver.source is Container"},
		{"a preinstalled driver without the version NVML must report", func(p *v1alpha1.StackPool) {
			p.Spec.Driver = v1alpha1.DriverOperand{Source: v1alpha1.SourcePreinstalled}
		}, "driver.version is required unless driver.source is GPUOperator"},
		{"a driver version that is not a driver version", func(p *v1alpha1.StackPool) {
			p.Spec.Driver.Version = "latest"
		}, "driver.version is a driver version as NVML reports it, e.g. 580.95.05"},
		{"a driver from an unknown source", func(p *v1alpha1.StackPool) {
			p.Spec.Driver.Source = "Helm"
		}, `spec.driver.source: Unsupported value: "Helm"`},
		{"a toolkit container without an image", func(p *v1alpha1.StackPool) {
			p.Spec.Toolkit.Image = ""
		}, "toolkit.image is required when toolkit.source is Container"},
		{"a toolkit from the GPU Operator with an image", func(p *v1alpha1.StackPool) {
			p.Spec.Toolkit.Source = v1alpha1.SourceGPUOperator
		}, "toolkit.image is set only when toolkit.source is Container"},
		{"a toolkit container without a version", func(p *v1alpha1.StackPool) {
			p.Spec.Toolkit.Version = ""
		}, "toolkit.version is required when toolkit.source is Container"},
		{"a toolkit version with a space", func(p *v1alpha1.StackPool) {
			p.Spec.Toolkit.Version = "1.18 beta"
		}, "toolkit.version is a version such as 1.18.0"},
		{"an image reference with a space", func(p *v1alpha1.StackPool) {
			p.Spec.Driver.Image = "nvcr.io/nvidia/driver 580"
		}, "spec.driver.image: Invalid value"},
		{"a registry with a scheme", func(p *v1alpha1.StackPool) {
			p.Spec.Registry = "https://registry.example"
		}, "spec.registry: Invalid value"},
		{"an agent container without an image", func(p *v1alpha1.StackPool) {
			p.Spec.Agent = v1alpha1.AgentOperand{Source: v1alpha1.SourceContainer, Version: "0.1.0"}
		}, "agent.image is required when agent.source is Container"},
		{"an agent container without the version the agent must report", func(p *v1alpha1.StackPool) {
			p.Spec.Agent = v1alpha1.AgentOperand{Source: v1alpha1.SourceContainer, Image: "ghcr.io/gpunode/gpunode"}
		}, "agent.version is required when agent.source is Container"},
		{"the chart's agent with an image", func(p *v1alpha1.StackPool) {
			p.Spec.Agent = v1alpha1.AgentOperand{Source: v1alpha1.SourceChart, Image: "ghcr.io/gpunode/gpunode"}
		}, "agent.image is set only when agent.source is Container"},
		{"the chart's agent with a version", func(p *v1alpha1.StackPool) {
			p.Spec.Agent = v1alpha1.AgentOperand{Source: v1alpha1.SourceChart, Version: "0.1.0"}
		}, "agent.version is set only when agent.source is Container"},
		{"an agent version that is not a gpunode version", func(p *v1alpha1.StackPool) {
			p.Spec.Agent = v1alpha1.AgentOperand{Source: v1alpha1.SourceContainer, Image: "ghcr.io/gpunode/gpunode", Version: "latest"}
		}, "agent.version is a gpunode version such as 0.1.0"},
		{"an agent from the GPU Operator, which has none", func(p *v1alpha1.StackPool) {
			p.Spec.Agent = v1alpha1.AgentOperand{Source: v1alpha1.SourceGPUOperator}
		}, `spec.agent.source: Unsupported value: "GPUOperator"`},
		{"a driver from the chart, which deploys no driver", func(p *v1alpha1.StackPool) {
			p.Spec.Driver.Source = v1alpha1.SourceChart
		}, `spec.driver.source: Unsupported value: "Chart"`},
		{"a pool whose name cannot be a label value", func(p *v1alpha1.StackPool) {
			p.Name = strings.Repeat("a", 64)
		}, "a StackPool's name is at most 63 characters"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := stackPool(fmt.Sprintf("invalid-pool-%d", i))
			tt.change(p)
			err := c.Create(t.Context(), p)
			if err == nil {
				_ = c.Delete(t.Context(), p)
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

func TestTheAPIServerTakesStackPoolsOfEverySource(t *testing.T) {
	_, c := testenv.Start(t)
	tests := []struct {
		name   string
		change func(p *v1alpha1.StackPool)
	}{
		{"the driver and the toolkit as containers", func(*v1alpha1.StackPool) {}},
		{"a preinstalled driver and toolkit", func(p *v1alpha1.StackPool) {
			p.Spec.Driver = v1alpha1.DriverOperand{Source: v1alpha1.SourcePreinstalled, Version: "570.172.08"}
			p.Spec.Toolkit = v1alpha1.ToolkitOperand{Source: v1alpha1.SourcePreinstalled}
		}},
		{"the GPU Operator's driver and toolkit, no version given", func(p *v1alpha1.StackPool) {
			p.Spec.Driver = v1alpha1.DriverOperand{Source: v1alpha1.SourceGPUOperator}
			p.Spec.Toolkit = v1alpha1.ToolkitOperand{Source: v1alpha1.SourceGPUOperator}
		}},
		{"containers from a mirror with a pull secret", func(p *v1alpha1.StackPool) {
			p.Spec.Registry = "registry.example:5000/mirror"
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: "mirror-pull"})
		}},
		{"the agent as a container of the pool", func(p *v1alpha1.StackPool) {
			p.Spec.Agent = v1alpha1.AgentOperand{Source: v1alpha1.SourceContainer, Image: "ghcr.io/gpunode/gpunode", Version: "0.1.0"}
		}},
		{"the chart's agent, said so", func(p *v1alpha1.StackPool) {
			p.Spec.Agent = v1alpha1.AgentOperand{Source: v1alpha1.SourceChart}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := stackPool(fmt.Sprintf("valid-pool-%d", i))
			tt.change(p)
			if err := c.Create(t.Context(), p); err != nil {
				t.Fatalf("creating %+v: %v", p.Spec, err)
			}
			t.Cleanup(func() { _ = c.Delete(t.Context(), p) })
		})
	}
}

func TestAnEmptyStatusShowsZeroNodesAndZeroReady(t *testing.T) {
	raw, err := json.Marshal(v1alpha1.StackPoolStatus{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"nodes":0`, `"readyNodes":0`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("an empty status is %s, without %s: kubectl's NODES and READY columns would be empty rather than 0", raw, want)
		}
	}
}
