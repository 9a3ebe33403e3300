package baseline

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/yamlfile"
)

// File identity.
const (
	FileAPIVersion = "gpunode.dev/v1alpha1"
	FileKind       = "PerformanceBaseline"
)

// ErrInvalidFile marks a baseline file that cannot be used (a usage error).
var ErrInvalidFile = errors.New("invalid baseline file")

// FileError names the file, the line and the problem.
type FileError struct {
	File    string
	Line    int
	Problem string
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("baseline %s: line %d: %s", e.File, e.Line, e.Problem)
	}
	return fmt.Sprintf("baseline %s: %s", e.File, e.Problem)
}

// Unwrap lets errors.Is(err, ErrInvalidFile) match.
func (e *FileError) Unwrap() error { return ErrInvalidFile }

// fileDoc is the YAML layout of a baseline file.
type fileDoc struct {
	APIVersion string      `yaml:"apiVersion"`
	Kind       string      `yaml:"kind"`
	Models     []fileModel `yaml:"models"`
}

// fileModel is one model's expected values; an absent value keeps the built-in one.
type fileModel struct {
	Model       string   `yaml:"model"`
	Names       []string `yaml:"names"`
	HBMCopyGBps *float64 `yaml:"hbmCopyGBps"`
	FP32TFLOPs  *float64 `yaml:"fp32TFLOPs"`
	FP64TFLOPs  *float64 `yaml:"fp64TFLOPs"`
	PCIeH2DGBps *float64 `yaml:"pcieH2DGBps"`
	PCIeD2HGBps *float64 `yaml:"pcieD2HGBps"`
	Reference   string   `yaml:"reference"`
}

// Load reads a baseline file on top of base (normally BuiltIn()).
func Load(path string, base *Table) (*Table, error) {
	data, err := yamlfile.ReadFile(path)
	if err != nil {
		return nil, &FileError{File: path, Problem: err.Error()}
	}
	return Parse(path, data, base)
}

// Parse reads baseline YAML named name on top of base; base is not changed. A model whose
// names match a base model replaces the values it sets and keeps the others; a new model
// is added.
func Parse(name string, data []byte, base *Table) (*Table, error) {
	var doc fileDoc
	root, err := yamlfile.Decode(name, data, &doc)
	if errors.Is(err, yamlfile.ErrEmpty) {
		return nil, &FileError{File: name, Problem: "file is empty"}
	}
	if err != nil {
		return nil, yamlErr(name, err)
	}
	if doc.APIVersion != FileAPIVersion || doc.Kind != FileKind {
		return nil, &FileError{File: name, Line: 1, Problem: fmt.Sprintf("apiVersion %q kind %q: want %s %s", doc.APIVersion, doc.Kind, FileAPIVersion, FileKind)}
	}
	models := yamlfile.Find(root, "models")
	if len(doc.Models) == 0 {
		return nil, &FileError{File: name, Line: yamlfile.Line(models), Problem: "models: lists no model"}
	}
	t := base.clone(base.Name() + " + " + name)
	for i, m := range doc.Models {
		if err := t.apply(name, m); err != nil {
			return nil, &FileError{File: name, Line: yamlfile.Line(yamlfile.Item(models, i)), Problem: fmt.Sprintf("models[%d]: %v", i, err)}
		}
	}
	return t, nil
}

// apply merges one file model into the table.
func (t *Table) apply(file string, m fileModel) error {
	if strings.TrimSpace(m.Model) == "" {
		return errors.New("model: must name the model")
	}
	names := m.Names
	if len(names) == 0 {
		names = []string{m.Model}
	}
	vals := map[Metric]*float64{HBMCopy: m.HBMCopyGBps, FP32: m.FP32TFLOPs, FP64: m.FP64TFLOPs, PCIeH2D: m.PCIeH2DGBps, PCIeD2H: m.PCIeD2HGBps}
	for _, metric := range Metrics {
		if v := vals[metric]; v != nil && !(*v > 0) {
			return fmt.Errorf("%s: must be a positive number of %s (got %g)", metric, metric.Unit(), *v)
		}
	}
	var e *entry
	for _, n := range names {
		if Normalize(n) == "" {
			return fmt.Errorf("names: %q has no letters or digits", n)
		}
		if found, ok := t.byName[Normalize(n)]; ok && e == nil {
			e = found
		}
	}
	if e == nil {
		e = &entry{model: m.Model, values: map[Metric]float64{}, pcieFromLink: true}
		t.entries = append(t.entries, e)
	}
	e.model = m.Model
	for _, n := range names {
		e.names = append(e.names, n)
		t.byName[Normalize(n)] = e
	}
	for _, metric := range Metrics {
		if v := vals[metric]; v != nil {
			e.values[metric] = *v
		}
	}
	e.origin = file
	e.reference = m.Reference
	if e.reference == "" {
		e.reference = "set in " + file
	}
	return nil
}

// yamlErr words the YAML library's first problem as a FileError.
func yamlErr(name string, err error) error {
	p := yamlfile.Summary(err)
	return &FileError{File: name, Line: p.Line, Problem: p.Msg}
}
