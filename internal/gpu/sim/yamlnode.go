package sim

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpunode/gpunode/internal/yamlfile"
)

// parseDocument reads exactly one YAML document and returns its top node, a mapping. YAML
// syntax errors keep their line.
func parseDocument(name string, data []byte) (*yaml.Node, error) {
	doc, err := yamlfile.Parse(name, data)
	if errors.Is(err, yamlfile.ErrEmpty) {
		return nil, &ScenarioError{File: name, Msg: "empty scenario (want apiVersion, preset, ...)"}
	}
	if err != nil {
		return nil, yamlError(name, err)
	}
	extra, err := yamlfile.Rest(name, data)
	if len(extra) > 0 {
		return nil, &ScenarioError{File: name, Line: extra[0].Line, Msg: "only one YAML document is allowed"}
	}
	if err != nil {
		return nil, yamlError(name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &ScenarioError{File: name, Msg: "empty scenario (want apiVersion, preset, ...)"}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &ScenarioError{File: name, Line: root.Line, Msg: "a scenario must be a mapping (apiVersion, preset, ...)"}
	}
	return root, nil
}

// yamlError turns an error of the YAML library into a ScenarioError at its first problem.
func yamlError(name string, err error) *ScenarioError {
	first := yamlfile.Problems(err)[0]
	return &ScenarioError{File: name, Line: first.Line, Msg: first.Msg}
}

// decodeStrict checks the node tree against the Go type t (unknown and duplicate keys,
// aliases, mappings and lists where they belong) and then decodes it into out.
func decodeStrict(name string, n *yaml.Node, out any) error {
	if msg, line := checkNode(n, reflect.TypeOf(out).Elem(), ""); msg != "" {
		return &ScenarioError{File: name, Line: line, Msg: msg}
	}
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("YAML decoder failed: %v", r)
			}
		}()
		return n.Decode(out)
	}()
	if err != nil {
		return yamlError(name, err)
	}
	return nil
}

// checkNode returns the first problem in n for type t, and its line; "" when there is none.
func checkNode(n *yaml.Node, t reflect.Type, where string) (string, int) {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return "YAML anchors and aliases are not supported in scenarios", n.Line
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return "", 0
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fmt.Sprintf("%s must be a mapping", describe(where)), n.Line
		}
		return checkMapping(n, t, where)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return fmt.Sprintf("%s must be a list", describe(where)), n.Line
		}
		for i, item := range n.Content {
			if msg, line := checkNode(item, t.Elem(), fmt.Sprintf("%s[%d]", where, i)); msg != "" {
				return msg, line
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return fmt.Sprintf("%s must be a mapping", describe(where)), n.Line
		}
		for k, v := range yamlfile.Pairs(n) {
			if msg, line := checkNode(k, t.Key(), where); msg != "" {
				return msg, line
			}
			if msg, line := checkNode(v, t.Elem(), join(where, k.Value)); msg != "" {
				return msg, line
			}
		}
	default:
		if n.Kind != yaml.ScalarNode {
			return fmt.Sprintf("%s must be a single value", describe(where)), n.Line
		}
	}
	return "", 0
}

func checkMapping(n *yaml.Node, t reflect.Type, where string) (string, int) {
	fields := map[string]reflect.Type{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		fields[tag] = f.Type
		names = append(names, tag)
	}
	seen := map[string]int{}
	for k, v := range yamlfile.Pairs(n) {
		if k.Kind != yaml.ScalarNode {
			return fmt.Sprintf("%s has a key that is not a plain name", describe(where)), k.Line
		}
		ft, ok := fields[k.Value]
		if !ok {
			in := ""
			if where != "" {
				in = " in " + where
			}
			return fmt.Sprintf("unknown field %q%s (want one of: %s)", k.Value, in, strings.Join(names, ", ")), k.Line
		}
		if first, dup := seen[k.Value]; dup {
			return fmt.Sprintf("field %q given twice (first at line %d)", k.Value, first), k.Line
		}
		seen[k.Value] = k.Line
		if msg, line := checkNode(v, ft, join(where, k.Value)); msg != "" {
			return msg, line
		}
	}
	return "", 0
}

func join(where, key string) string {
	if where == "" {
		return key
	}
	return where + "." + key
}

func describe(where string) string {
	if where == "" {
		return "the scenario"
	}
	return where
}

// lineOf is the line of the deepest value on a dotted key path under mapping n ("count",
// "pcie.busId"), else the line of n itself.
func lineOf(n *yaml.Node, path string) int {
	return yamlfile.Line(yamlfile.Find(n, yamlfile.Dotted(path)...), n)
}
