package nodepolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/yamlfile"
)

// Kind is the one kind a policy file holds: the GPUNodePolicy that `kubectl apply` takes.
const Kind = "GPUNodePolicy"

// legacyKind is the file format `gpunode accept --policy` read before it read GPUNodePolicy.
const legacyKind = "AcceptancePolicy"

// Load reads a GPUNodePolicy file, for `gpunode accept --policy`: the same YAML that
// `kubectl apply` takes, strictly (an unknown field, a value of the wrong type, a second
// document are errors), with the values acceptance checks validated. Errors are
// *accept.PolicyError naming the file and the line.
func Load(path string) (*v1alpha1.GPUNodePolicy, error) {
	data, err := yamlfile.ReadFile(path)
	if err != nil {
		return nil, &accept.PolicyError{File: path, Problem: err.Error()}
	}
	return Parse(path, data)
}

// Parse is Load of data; name is used in errors.
func Parse(name string, data []byte) (*v1alpha1.GPUNodePolicy, error) {
	bad := func(line int, format string, args ...any) error {
		return &accept.PolicyError{File: name, Line: line, Problem: fmt.Sprintf(format, args...)}
	}
	doc, err := yamlfile.Parse(name, data)
	if errors.Is(err, yamlfile.ErrEmpty) || (err == nil && yamlfile.IsNull(doc)) {
		return nil, bad(0, "file is empty")
	}
	if err != nil {
		return nil, yamlError(name, data, err)
	}
	extra, err := yamlfile.Rest(name, data)
	for _, d := range extra {
		if !yamlfile.IsNull(d) {
			return nil, bad(d.Line, "more than one YAML document (a policy file holds one)")
		}
	}
	if err != nil {
		return nil, yamlError(name, data, err)
	}
	if err := header(name, doc); err != nil {
		return nil, err
	}
	if line, msg := unknownKey(yamlfile.Body(doc), reflect.TypeFor[v1alpha1.GPUNodePolicy](), ""); msg != "" {
		return nil, bad(line, "%s", msg)
	}
	var tree any
	if err := doc.Decode(&tree); err != nil { // a key given twice
		return nil, yamlError(name, data, err)
	}
	gp, err := decode(tree)
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, bad(lineOf(yamlfile.Body(doc), strings.Split(te.Field, ".")), "%s: want %s, got %s", te.Field, te.Type, te.Value)
		}
		return nil, bad(0, "%v", err)
	}
	if gp.Name == "" {
		return nil, bad(yamlfile.KeyLine(doc, "metadata"), "metadata.name: a policy needs a name (it names the policy in the record)")
	}
	if path, msg := validate(gp); msg != "" {
		return nil, bad(yamlfile.KeyLine(doc, path...), "%s", msg)
	}
	return gp, nil
}

// lineOf is the line of the key at a JSON field path ("spec.classes.gpus", which names no
// list item): in a list, the first item that has the next key; 0 when not found.
func lineOf(n *yaml.Node, keys []string) int {
	if len(keys) == 0 || n == nil {
		return 0
	}
	switch n.Kind {
	case yaml.SequenceNode:
		for _, item := range n.Content {
			if line := lineOf(item, keys); line > 0 {
				return line
			}
		}
	case yaml.MappingNode:
		for k, v := range yamlfile.Pairs(n) {
			if k.Value == keys[0] {
				if line := lineOf(v, keys[1:]); line > 0 {
					return line
				}
				return k.Line
			}
		}
	}
	return 0
}

// header checks apiVersion and kind; a file of the earlier AcceptancePolicy kind is refused
// with what to write instead.
func header(name string, doc *yaml.Node) error {
	str := func(key string) (string, int) {
		n := yamlfile.Value(yamlfile.Body(doc), key)
		if n == nil {
			return "", 0
		}
		return n.Value, n.Line
	}
	kind, kindLine := str("kind")
	if kind == legacyKind {
		return &accept.PolicyError{File: name, Line: kindLine, Problem: "kind AcceptancePolicy is no longer read: write the policy as a GPUNodePolicy, " +
			"the object kubectl applies (kind: GPUNodePolicy; name: → metadata.name:; expect: → spec.classes: [{class: NAME, ...}]; " +
			"versions: → spec.versions:; layers:, thresholds:, host: → spec.acceptance.layers:, .thresholds:, .host:), see docs/policy.md"}
	}
	if kind != Kind {
		return &accept.PolicyError{File: name, Line: kindLine, Problem: fmt.Sprintf("kind: %q is not supported (want %s)", kind, Kind)}
	}
	if api, line := str("apiVersion"); api != v1alpha1.GroupVersion.String() {
		return &accept.PolicyError{File: name, Line: line, Problem: fmt.Sprintf("apiVersion: %q is not supported (want %s)", api, v1alpha1.GroupVersion)}
	}
	return nil
}

// yamlError words the YAML library's first problem, at the line found by bisecting when
// the library gave none.
func yamlError(name string, data []byte, err error) error {
	p := yamlfile.Summary(err)
	if p.Line == 0 {
		p.Line = yamlfile.LocateLine(data, p.Msg, new(any))
	}
	return &accept.PolicyError{File: name, Line: p.Line, Problem: p.Msg}
}

// decode converts the YAML tree to the API type through JSON, as the API server reads it.
func decode(tree any) (*v1alpha1.GPUNodePolicy, error) {
	b, err := json.Marshal(tree)
	if err != nil {
		return nil, err
	}
	gp := &v1alpha1.GPUNodePolicy{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return gp, dec.Decode(gp)
}

// validate checks what acceptance will run with: the layers, and the effective policy of
// every class the file lists (and of a node of no listed class). It returns the YAML path
// of the first problem and the problem, worded with the file's own path; "" when none.
func validate(gp *v1alpha1.GPUNodePolicy) ([]any, string) {
	layers := []any{"spec", "acceptance", "layers"}
	seen := map[v1alpha1.Layer]bool{}
	for i, l := range gp.Spec.Acceptance.Layers {
		if !slices.Contains(allLayers, accept.Layer(l)) {
			return append(layers, i), fmt.Sprintf("spec.acceptance.layers: %q is not a layer (want one of %s)", l, layerNames())
		}
		if seen[l] {
			return append(layers, i), fmt.Sprintf("spec.acceptance.layers: %q is named a second time", l)
		}
		seen[l] = true
	}
	if path, msg := validateDRA(gp); msg != "" {
		return path, msg
	}
	// The unsigned values of acceptance's policy: the conversion cannot see a sign.
	th, host := gp.Spec.Acceptance.Thresholds, gp.Spec.Acceptance.Host
	for _, v := range []struct {
		path []any
		v    *int64
	}{
		{[]any{"spec", "acceptance", "thresholds", "maxPCIeReplays"}, th.MaxPCIeReplays},
		{[]any{"spec", "acceptance", "thresholds", "maxCorrectedECC"}, th.MaxCorrectedECC},
		{[]any{"spec", "acceptance", "thresholds", "correctedECCPerMinute"}, th.CorrectedECCPerMinute},
		{[]any{"spec", "acceptance", "thresholds", "pcieReplaysPerMinute"}, th.PCIeReplaysPerMinute},
		{[]any{"spec", "acceptance", "host", "minShmMiB"}, host.MinShmMiB},
	} {
		if v.v != nil && *v.v < 0 {
			return v.path, fmt.Sprintf("%s: must not be negative (got %d)", dotted(v.path), *v.v)
		}
	}
	for i, c := range gp.Spec.Classes {
		if c.MinMemoryMiB < 0 {
			path := []any{"spec", "classes", i, "minMemoryMiB"}
			return path, fmt.Sprintf("%s: must not be negative (got %d)", dotted(path), c.MinMemoryMiB)
		}
	}
	classes := append([]string{""}, classNames(gp)...)
	for i, class := range classes {
		p, _ := AcceptPolicy(gp, class)
		var fe *accept.FieldError
		if err := p.Validate(); errors.As(err, &fe) {
			path := filePath(fe.Path, i-1)
			return path, fmt.Sprintf("%s: %s", dotted(path), fe.Problem)
		} else if err != nil {
			return nil, err.Error()
		}
	}
	return nil, ""
}

// allLayers are the layers of the API, in its order.
var allLayers = []accept.Layer{accept.LayerHost, accept.LayerHardware, accept.LayerKubernetes, accept.LayerContainer,
	accept.LayerFabric, accept.LayerPerformance, accept.LayerFrameworks}

func layerNames() string {
	var s []string
	for _, l := range allLayers {
		s = append(s, string(l))
	}
	return strings.Join(s, ", ")
}

// filePath is where a path of accept.Policy lives in a GPUNodePolicy; class is the index of
// the class whose expectation it is.
func filePath(acceptPath string, class int) []any {
	head, rest, _ := strings.Cut(acceptPath, ".")
	var out []any
	switch head {
	case "expect":
		out = []any{"spec", "classes", max(class, 0)}
	case "versions":
		out = []any{"spec", "versions"}
	case "layers", "thresholds", "host":
		out = []any{"spec", "acceptance", head}
	default:
		out = []any{"spec", head}
	}
	if rest != "" {
		out = append(out, yamlfile.Dotted(rest)...)
	}
	return out
}

// dotted writes a path for people: spec.classes[1].gpus.
func dotted(path []any) string {
	var b strings.Builder
	for _, s := range path {
		switch s := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, s)
		}
	}
	return b.String()
}

func classNames(gp *v1alpha1.GPUNodePolicy) []string {
	var out []string
	for _, c := range gp.Spec.Classes {
		out = append(out, c.Class)
	}
	return out
}
