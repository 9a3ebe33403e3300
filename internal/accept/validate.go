package accept

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidPolicy marks a policy file that cannot be used (exit code 2).
var ErrInvalidPolicy = errors.New("invalid policy")

// PolicyError names the file, the line and the problem.
type PolicyError struct {
	File    string
	Line    int
	Problem string
}

func (e *PolicyError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("policy %s: line %d: %s", e.File, e.Line, e.Problem)
	}
	return fmt.Sprintf("policy %s: %s", e.File, e.Problem)
}

// Unwrap lets errors.Is(err, ErrInvalidPolicy) match.
func (e *PolicyError) Unwrap() error { return ErrInvalidPolicy }

// FieldError is a value of a policy that cannot be used, at its path in the policy
// ("host.iommu", "thresholds.maxPowerPercent"); the loader of a policy file turns the path
// into the file's own and finds its line.
type FieldError struct {
	Path string
	// Problem says what is wrong, without the path.
	Problem string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Problem }

func ferr(path, format string, args ...any) error {
	return &FieldError{Path: path, Problem: fmt.Sprintf(format, args...)}
}

func oneOf(path, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return ferr(path, "%q is not one of %s", v, strings.Join(allowed, ", "))
}

// Validate checks every value against what the checks accept and puts each layer in its
// canonical spelling; the first problem is a *FieldError.
func (p *Policy) Validate() error {
	seen := map[Layer]bool{}
	for i, l := range p.Layers {
		layer, err := ParseLayer(string(l))
		if err != nil {
			return ferr("layers", "%v", err)
		}
		if seen[layer] {
			return ferr("layers", "%q names layer %s (%s) a second time", l, layer, layer.Code())
		}
		seen[layer] = true
		p.Layers[i] = layer
	}
	checks := []error{
		inRange("expect.gpus", p.Expect.GPUs, 0, 64),
		oneOf("expect.mig", p.Expect.MIG, "disabled", "enabled", "any"),
		oneOf("expect.fabric", p.Expect.Fabric, "auto", "required", "ignore"),
		inRange("expect.nvlinksPerGPU", p.Expect.NVLinksPerGPU, 0, 64),
		inRange("expect.pcieGen", p.Expect.PCIeGen, 0, 6),
		oneOfInt("expect.pcieWidth", p.Expect.PCIeWidth, 0, 1, 2, 4, 8, 16, 32),
		inRange("thresholds.maxTemperatureC", p.Thresholds.MaxTemperatureC, 0, 150),
		nonNegative("thresholds.maxRetiredPages", p.Thresholds.MaxRetiredPages),
		nonNegative("thresholds.maxCorrectableRemappedRows", p.Thresholds.MaxCorrectableRemappedRows),
		inRange("thresholds.maxPowerPercent", p.Thresholds.MaxPowerPercent, 1, 100),
		inRange("thresholds.minPerformancePercent", p.Thresholds.MinPerformancePercent, 1, 100),
		oneOf("host.iommu", p.Host.IOMMU, "any", "enabled", "passthrough", "disabled"),
		oneOfInt("host.cgroupVersion", p.Host.CgroupVersion, 0, 1, 2),
		oneOf("host.secureBoot", p.Host.SecureBoot, "any", "enabled", "disabled"),
		oneOf("host.smt", p.Host.SMT, "any", "on", "off"),
		nonNegative("host.minHugepages", p.Host.MinHugepages),
		inRange("host.minFreePercent", p.Host.MinFreePercent, 0, 100),
		inRange("host.minFreeInodesPercent", p.Host.MinFreeInodesPercent, 0, 100),
		oneOf("host.nvidiaRuntime", p.Host.NVIDIARuntime, "auto", "required", "ignore"),
		oneOf("host.kubeletReservations", p.Host.KubeletReservations, "warn", "require", "ignore"),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	// A slice, not a map: with several bad constraints the same one is reported every time.
	for _, vs := range []struct {
		path string
		cs   []string
	}{
		{"versions.driver", p.Versions.Driver}, {"versions.cuda", p.Versions.CUDA},
		{"versions.kernel", p.Versions.Kernel}, {"versions.containerd", p.Versions.Containerd},
	} {
		for _, c := range vs.cs {
			if _, err := ParseConstraint(c); err != nil {
				return ferr(vs.path, "%v", err)
			}
		}
	}
	return nil
}

func nonNegative(path string, v int) error {
	if v < 0 {
		return ferr(path, "must not be negative (got %d)", v)
	}
	return nil
}

func inRange(path string, v, lo, hi int) error {
	if v < lo || v > hi {
		return ferr(path, "must be between %d and %d (got %d)", lo, hi, v)
	}
	return nil
}

func oneOfInt(path string, v int, allowed ...int) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return ferr(path, "%d is not one of %v", v, allowed)
}
