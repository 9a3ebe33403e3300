package accept

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
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

// LoadPolicy reads a policy file on top of DefaultPolicy.
func LoadPolicy(path string) (Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Policy{}, &PolicyError{File: path, Problem: fmt.Sprintf("cannot read: %v", errors.Unwrap(err))}
	}
	return ParsePolicy(path, data)
}

var yamlLine = regexp.MustCompile(`line (\d+): (.*)`)

// ParsePolicy parses policy YAML; name is used in errors.
func ParsePolicy(name string, data []byte) (Policy, error) {
	p := DefaultPolicy()
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return p, yamlError(name, data, err)
	}
	if len(root.Content) == 0 || root.Content[0].ShortTag() == "!!null" {
		return p, &PolicyError{File: name, Problem: "file is empty"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return p, yamlError(name, data, err)
	}
	// A second document would be silently ignored: refuse it (an empty one is harmless).
	for {
		var extra yaml.Node
		err := dec.Decode(&extra)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return p, yamlError(name, data, err)
		}
		if len(extra.Content) > 0 && extra.Content[0].ShortTag() != "!!null" {
			return p, &PolicyError{File: name, Line: extra.Line, Problem: "more than one YAML document (a policy file holds one)"}
		}
	}
	if err := p.validate(); err != nil {
		var fe *fieldErr
		if errors.As(err, &fe) {
			return p, &PolicyError{File: name, Line: lineOf(&root, fe.path), Problem: fe.msg}
		}
		return p, &PolicyError{File: name, Problem: err.Error()}
	}
	return p, nil
}

func yamlError(name string, data []byte, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n")
	msg = strings.TrimPrefix(msg, "yaml: ")
	first := strings.TrimSpace(strings.SplitN(msg, "\n", 2)[0])
	if m := yamlLine.FindStringSubmatch(first); m != nil {
		line, _ := strconv.Atoi(m[1])
		problem := m[2]
		if f, ok := strings.CutPrefix(problem, "field "); ok {
			if fld, _, ok2 := strings.Cut(f, " not found in type"); ok2 {
				problem = fmt.Sprintf("unknown field %q", fld)
			}
		}
		return &PolicyError{File: name, Line: line, Problem: problem}
	}
	return &PolicyError{File: name, Line: errorLine(data, first), Problem: first}
}

// errorLine finds the line of a YAML error that came without one (the parser omits the
// line on the first line, for unknown anchors and for invalid UTF-8): the first line at
// which the file, cut after that line, fails with the same problem; 0 when none does. It
// bisects, so a large file costs a few parses, not one per line.
func errorLine(data []byte, problem string) int {
	var ends []int // ends[i]: the length of the file cut after line i+1
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	failsAt := func(i int) bool {
		var p Policy
		dec := yaml.NewDecoder(bytes.NewReader(data[:ends[i]]))
		dec.KnownFields(true)
		err := dec.Decode(&p)
		return err != nil && strings.Contains(err.Error(), problem)
	}
	i := sort.Search(len(ends), failsAt)
	if i == len(ends) {
		return 0
	}
	return i + 1
}

// fieldErr is a semantic error at a YAML path such as "host.iommu".
type fieldErr struct {
	path string
	msg  string
}

func (e *fieldErr) Error() string { return e.path + ": " + e.msg }

func ferr(path, format string, args ...any) error {
	return &fieldErr{path: path, msg: path + ": " + fmt.Sprintf(format, args...)}
}

// lineOf finds the line of a dotted path in a YAML document; 0 when absent.
func lineOf(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, key := range strings.Split(path, ".") {
		if n.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				line = n.Content[i].Line
				n = n.Content[i+1]
				found = true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}

func oneOf(path, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return ferr(path, "%q is not one of %s", v, strings.Join(allowed, ", "))
}

func (p *Policy) validate() error {
	if p.APIVersion != PolicyAPIVersion {
		return ferr("apiVersion", "%q is not supported (want %s)", p.APIVersion, PolicyAPIVersion)
	}
	if p.Kind != PolicyKind {
		return ferr("kind", "%q is not supported (want %s)", p.Kind, PolicyKind)
	}
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
		nonNegative("expect.gpus", p.Expect.GPUs),
		oneOf("expect.mig", p.Expect.MIG, "disabled", "enabled", "any"),
		oneOf("expect.fabric", p.Expect.Fabric, "auto", "required", "ignore"),
		nonNegative("expect.nvlinksPerGPU", p.Expect.NVLinksPerGPU),
		inRange("expect.pcieGen", p.Expect.PCIeGen, 0, 6),
		oneOfInt("expect.pcieWidth", p.Expect.PCIeWidth, 0, 1, 2, 4, 8, 16, 32),
		nonNegative("thresholds.maxTemperatureC", p.Thresholds.MaxTemperatureC),
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
