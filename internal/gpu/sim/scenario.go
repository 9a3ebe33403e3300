package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/yamlfile"
)

// APIVersion is the apiVersion every scenario file declares.
const APIVersion = "gpunode.dev/sim/v1"

// maxGPUs bounds a scenario's count.
const maxGPUs = 64

// Scenario is a simulated node: its driver, its GPUs (overrides applied) and its timed
// faults (in file order). Build one with Parse or PresetScenario, or in code, then New.
type Scenario struct {
	// Name is the file name or preset name, used in errors.
	Name string
	// Preset is the preset the scenario starts from.
	Preset  string
	Driver  gpu.Driver
	Devices []gpu.Device
	Faults  []Fault
}

// fileSpec is the YAML schema of a scenario file.
type fileSpec struct {
	APIVersion string      `yaml:"apiVersion"`
	Preset     string      `yaml:"preset"`
	Driver     *driverSpec `yaml:"driver"`
	Count      *int        `yaml:"count"`
	GPUs       []gpuSpec   `yaml:"gpus"`
	Faults     []faultSpec `yaml:"faults"`
}

type driverSpec struct {
	Version        *string `yaml:"version"`
	LibraryVersion *string `yaml:"libraryVersion"`
	CUDAVersion    *string `yaml:"cudaVersion"`
}

type faultSpec struct {
	At              string  `yaml:"at"`
	GPU             *int    `yaml:"gpu"`
	Type            string  `yaml:"type"`
	XID             int     `yaml:"xid"`
	Message         string  `yaml:"message"`
	PID             int     `yaml:"pid"`
	Process         string  `yaml:"process"`
	NoProcess       bool    `yaml:"noProcess"`
	GPUInstance     *int    `yaml:"gpuInstance"`
	ComputeInstance *int    `yaml:"computeInstance"`
	Count           uint64  `yaml:"count"`
	LinkGen         int     `yaml:"linkGen"`
	LinkWidth       int     `yaml:"linkWidth"`
	Links           []int   `yaml:"links"`
	TemperatureC    int     `yaml:"temperatureC"`
	PowerW          float64 `yaml:"powerW"`
	Action          string  `yaml:"action"`
	Factor          float64 `yaml:"factor"`
}

// Parse reads a scenario file. name is used in errors, which are *ScenarioError (wrapping
// ErrInvalidScenario) with the line of the problem.
func Parse(name string, data []byte) (*Scenario, error) {
	root, err := parseDocument(name, data)
	if err != nil {
		return nil, err
	}
	var spec fileSpec
	if err := decodeStrict(name, root, &spec); err != nil {
		return nil, err
	}
	bad := func(line int, format string, args ...any) error {
		return &ScenarioError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case yamlfile.Value(root, "apiVersion") == nil:
		return nil, bad(root.Line, "missing apiVersion (want %s)", APIVersion)
	case spec.APIVersion != APIVersion:
		return nil, bad(lineOf(root, "apiVersion"), "unsupported apiVersion %q (want %s)", spec.APIVersion, APIVersion)
	case spec.Preset == "":
		return nil, bad(lineOf(root, "preset"), "missing preset (want one of: %s)", strings.Join(Presets(), ", "))
	}
	s, err := PresetScenario(spec.Preset)
	if err != nil {
		return nil, bad(lineOf(root, "preset"), "unknown preset %q (want one of: %s)", spec.Preset, strings.Join(Presets(), ", "))
	}
	s.Name = name
	if d := spec.Driver; d != nil {
		setIf(&s.Driver.Version, d.Version)
		setIf(&s.Driver.LibraryVersion, d.LibraryVersion)
		setIf(&s.Driver.CUDAVersion, d.CUDAVersion)
	}
	size := fmt.Sprintf("preset %s has %d GPUs", spec.Preset, len(s.Devices))
	if spec.Count != nil {
		if *spec.Count < 0 || *spec.Count > maxGPUs {
			return nil, bad(lineOf(root, "count"), "count %d out of range (0-%d)", *spec.Count, maxGPUs)
		}
		s.Devices = resize(spec.Preset, s.Devices, *spec.Count)
		size = fmt.Sprintf("count is %d", *spec.Count)
	}
	if err := applyGPUSpecs(name, yamlfile.Value(root, "gpus"), spec.GPUs, s.Devices, size); err != nil {
		return nil, err
	}
	wire(s.Devices) // again: count and overrides change the layout
	faults := yamlfile.Value(root, "faults")
	for i, fs := range spec.Faults {
		n := yamlfile.Item(faults, i)
		f, err := fs.fault(name, n)
		if err != nil {
			return nil, err
		}
		if fs.GPU == nil && f.Type != FaultKernelLog {
			if _, known := fieldsOf(f.Type); known {
				return nil, bad(n.Line, "%s fault needs gpu (an index from 0 to %d)", f.Type, len(s.Devices)-1)
			}
		}
		if p := checkFault(f, s.Devices); p != nil {
			msg := p.msg
			if p.field == "gpu" && strings.Contains(msg, "out of range") {
				msg = fmt.Sprintf("gpu index %d out of range (%s)", f.GPU, size)
			}
			return nil, bad(lineOf(n, p.field), "%s", msg)
		}
		s.Faults = append(s.Faults, f)
	}
	return s, nil
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// fault converts one YAML fault, rejecting fields that do not apply to its type.
func (fs faultSpec) fault(name string, n *yaml.Node) (Fault, error) {
	f := Fault{
		GPU: -1, Type: FaultType(fs.Type), XID: fs.XID, Message: fs.Message, PID: fs.PID,
		Process: fs.Process, NoProcess: fs.NoProcess, GPUInstance: fs.GPUInstance,
		ComputeInstance: fs.ComputeInstance, Count: fs.Count, LinkGen: fs.LinkGen,
		LinkWidth: fs.LinkWidth, Links: fs.Links, TemperatureC: fs.TemperatureC,
		PowerW: fs.PowerW, Action: gpu.RecoveryAction(fs.Action), Factor: fs.Factor,
	}
	if fs.GPU != nil {
		f.GPU = *fs.GPU
	}
	bad := func(line int, format string, args ...any) (Fault, error) {
		return Fault{}, &ScenarioError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if fs.Type == "" {
		return bad(n.Line, "fault needs a type (want one of: %s)", typeNames())
	}
	allowed, known := fieldsOf(f.Type)
	if !known {
		return bad(lineOf(n, "type"), "unknown fault type %q (want one of: %s)", fs.Type, typeNames())
	}
	for key := range yamlfile.Pairs(n) {
		if k := key.Value; k != "at" && k != "gpu" && k != "type" && !slices.Contains(allowed, k) {
			want := "none"
			if len(allowed) > 0 {
				want = strings.Join(allowed, ", ")
			}
			return bad(key.Line, "field %q does not apply to a %s fault (its fields: %s)", k, f.Type, want)
		}
	}
	if fs.At != "" {
		d, err := time.ParseDuration(fs.At)
		if err != nil {
			return bad(lineOf(n, "at"), "at %q is not a duration like 30s or 1m30s: %v", fs.At, err)
		}
		if d < 0 {
			return bad(lineOf(n, "at"), "at %q is negative", fs.At)
		}
		f.At = d
	}
	return f, nil
}

func typeNames() string {
	var names []string
	for _, t := range FaultTypes() {
		names = append(names, string(t))
	}
	return strings.Join(names, ", ")
}

// resize drops GPUs past count, or adds GPUs cloned from the preset's in turn, each with its
// own index, UUID, serial and bus id.
func resize(name string, devs []gpu.Device, count int) []gpu.Device {
	if count <= len(devs) {
		return devs[:count]
	}
	p := presets[name]
	for i := len(devs); i < count; i++ {
		devs = append(devs, p.device(name, i))
	}
	return devs
}
