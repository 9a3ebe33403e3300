package stack

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// GPUOperator is what the GPU Operator's objects deploy, when they exist: a ClusterPolicy
// (clusterpolicies.nvidia.com/v1) deploys the driver and the toolkit on every GPU node
// unless driver.enabled / toolkit.enabled is false, and leaves the driver to NVIDIADriver
// objects (nvidiadrivers.nvidia.com/v1alpha1) when driver.useNvidiaDriverCRD is true.
type GPUOperator struct {
	// ClusterPolicy is the ClusterPolicy's name; "" when there is none (or its CRD is
	// not installed).
	ClusterPolicy string
	// Driver and Toolkit are the ClusterPolicy's driver.enabled and toolkit.enabled
	// (default true).
	Driver, Toolkit bool
	// DriverCRD is driver.useNvidiaDriverCRD: the NVIDIADrivers deploy the driver.
	DriverCRD bool
	// NVIDIADrivers are the NVIDIADriver objects, by name.
	NVIDIADrivers []NVIDIADriver
}

// NVIDIADriver is one NVIDIADriver's node selector (empty: the default driver, every GPU
// node that no other NVIDIADriver selects).
type NVIDIADriver struct {
	Name         string
	NodeSelector map[string]string
}

// DriverOwner names the GPU Operator object that deploys the driver on a node with these
// labels ("ClusterPolicy cluster-policy", "NVIDIADriver default"), with the condition
// reason; "" when none does.
func (g GPUOperator) DriverOwner(nodeLabels map[string]string) (owner, reason string) {
	if g.ClusterPolicy != "" && g.Driver && !g.DriverCRD {
		return "ClusterPolicy " + g.ClusterPolicy, v1alpha1.ReasonClusterPolicy
	}
	if !g.DriverCRD && g.ClusterPolicy != "" {
		return "", "" // driver.enabled=false: the NVIDIADrivers are not used
	}
	drivers := slices.Clone(g.NVIDIADrivers)
	slices.SortFunc(drivers, func(a, b NVIDIADriver) int { return cmp.Compare(a.Name, b.Name) })
	var fallback string
	for _, d := range drivers {
		if len(d.NodeSelector) == 0 {
			if fallback == "" {
				fallback = d.Name
			}
			continue
		}
		if labels.SelectorFromSet(d.NodeSelector).Matches(labels.Set(nodeLabels)) {
			return "NVIDIADriver " + d.Name, v1alpha1.ReasonNVIDIADriver
		}
	}
	if fallback != "" {
		return "NVIDIADriver " + fallback, v1alpha1.ReasonNVIDIADriver
	}
	return "", ""
}

// DriverOwnsAll reports whether the GPU Operator deploys the driver on every node (a
// ClusterPolicy that deploys it itself, or a default NVIDIADriver), so that no driver
// DaemonSet is rendered at all.
func (g GPUOperator) DriverOwnsAll() (owner, reason string, all bool) {
	if g.ClusterPolicy != "" && g.Driver && !g.DriverCRD {
		return "ClusterPolicy " + g.ClusterPolicy, v1alpha1.ReasonClusterPolicy, true
	}
	if !g.DriverCRD && g.ClusterPolicy != "" {
		return "", "", false
	}
	for _, d := range g.NVIDIADrivers {
		if len(d.NodeSelector) == 0 {
			return "NVIDIADriver " + d.Name, v1alpha1.ReasonNVIDIADriver, true
		}
	}
	return "", "", false
}

// ToolkitOwner names the ClusterPolicy that deploys the toolkit; "" when none does.
func (g GPUOperator) ToolkitOwner() (owner, reason string) {
	if g.ClusterPolicy != "" && g.Toolkit {
		return "ClusterPolicy " + g.ClusterPolicy, v1alpha1.ReasonClusterPolicy
	}
	return "", ""
}

// Sources is who provides a node's operands, after the GPU Operator's objects.
type Sources struct {
	Driver, Toolkit v1alpha1.OperandSource
	// DriverOwner and ToolkitOwner name the GPU Operator object that took over an operand
	// the pool asks gpunode to deploy ("" when it did not).
	DriverOwner, ToolkitOwner string
}

// Effective is who provides the operands of pool p on a node with these labels: the
// spec's sources, except that an operand the spec asks gpunode to deploy (Container) and
// the GPU Operator deploys on the node is the GPU Operator's.
func Effective(p *v1alpha1.StackPool, g GPUOperator, nodeLabels map[string]string) Sources {
	s := Sources{Driver: p.Spec.Driver.Source, Toolkit: p.Spec.Toolkit.Source}
	if s.Driver == v1alpha1.SourceContainer {
		if owner, _ := g.DriverOwner(nodeLabels); owner != "" {
			s.Driver, s.DriverOwner = v1alpha1.SourceGPUOperator, owner
		}
	}
	if s.Toolkit == v1alpha1.SourceContainer {
		if owner, _ := g.ToolkitOwner(); owner != "" {
			s.Toolkit, s.ToolkitOwner = v1alpha1.SourceGPUOperator, owner
		}
	}
	return s
}

// ownedMessage says that the GPU Operator owns an operand of the pool.
func ownedMessage(operand, owner string) string {
	return fmt.Sprintf("the %s is the GPU Operator's (%s deploys it): gpunode does not deploy it and waits for it", operand, owner)
}
