// Package fault is gpunode's vendor-neutral fault taxonomy: which part of the node is at
// fault, how bad it is, and what must happen. Every fault source (XIDs, NVML events,
// counters, host checks) speaks it, so one set of decisions serves every vendor.
package fault

import "fmt"

// Component is the part of the node a fault is in.
type Component string

// Components (the five fault classes of a GPU node map onto them: application; device = gpu and
// memory; PCIe/NVLink/NIC = pcie and interconnect; driver; node).
const (
	ComponentApplication  Component = "application"
	ComponentGPU          Component = "gpu"
	ComponentMemory       Component = "memory"
	ComponentInterconnect Component = "interconnect"
	ComponentPCIe         Component = "pcie"
	ComponentDriver       Component = "driver"
	ComponentNode         Component = "node"
)

// Components lists every component.
var Components = []Component{ComponentApplication, ComponentGPU, ComponentMemory, ComponentInterconnect, ComponentPCIe, ComponentDriver, ComponentNode}

// Severity is how bad a fault is.
type Severity string

// Severities, from least to most severe.
const (
	SeverityInfo     Severity = "info"
	SeverityWarning  Severity = "warning"
	SeverityCritical Severity = "critical"
	SeverityFatal    Severity = "fatal"
)

// Severities lists every severity, least severe first.
var Severities = []Severity{SeverityInfo, SeverityWarning, SeverityCritical, SeverityFatal}

// Rank orders severities: info 0 ... fatal 3; unknown -1.
func (s Severity) Rank() int {
	for i, v := range Severities {
		if v == s {
			return i
		}
	}
	return -1
}

// Action is what must happen to clear a fault, from least to most disruptive.
type Action string

// Actions. Service means a person (RMA path): automation cannot clear it.
const (
	ActionNone         Action = "none"
	ActionRestartApp   Action = "restart-app"
	ActionDrainP2P     Action = "drain-p2p"
	ActionResetGPU     Action = "reset-gpu"
	ActionReloadDriver Action = "reload-driver"
	ActionRebootNode   Action = "reboot-node"
	ActionService      Action = "service"
)

// Actions lists every action, least disruptive first.
var Actions = []Action{ActionNone, ActionRestartApp, ActionDrainP2P, ActionResetGPU, ActionReloadDriver, ActionRebootNode, ActionService}

// Rank orders actions: none 0 ... service 6; unknown -1.
func (a Action) Rank() int {
	for i, v := range Actions {
		if v == a {
			return i
		}
	}
	return -1
}

// Max returns the more disruptive of two actions.
func Max(a, b Action) Action {
	if b.Rank() > a.Rank() {
		return b
	}
	return a
}

// MaxSeverity returns the more severe of two severities.
func MaxSeverity(a, b Severity) Severity {
	if b.Rank() > a.Rank() {
		return b
	}
	return a
}

// ParseComponent validates a component name from a file or a flag.
func ParseComponent(s string) (Component, error) {
	for _, v := range Components {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("unknown component %q (want one of %v)", s, Components)
}

// ParseSeverity validates a severity name.
func ParseSeverity(s string) (Severity, error) {
	if Severity(s).Rank() < 0 {
		return "", fmt.Errorf("unknown severity %q (want one of %v)", s, Severities)
	}
	return Severity(s), nil
}

// ParseAction validates an action name.
func ParseAction(s string) (Action, error) {
	if Action(s).Rank() < 0 {
		return "", fmt.Errorf("unknown action %q (want one of %v)", s, Actions)
	}
	return Action(s), nil
}
