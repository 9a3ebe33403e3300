package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// parseDocument reads exactly one YAML document into its node tree. YAML syntax errors keep
// their line.
func parseDocument(name string, data []byte) (root *yaml.Node, err error) {
	defer func() {
		// The YAML library is third-party code: a panic on hostile input becomes an error.
		if r := recover(); r != nil {
			root, err = nil, &ScenarioError{File: name, Msg: fmt.Sprintf("YAML parser failed: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ScenarioError{File: name, Msg: "empty scenario (want apiVersion, preset, ...)"}
		}
		return nil, yamlError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &ScenarioError{File: name, Line: extra.Line, Msg: "only one YAML document is allowed"}
	} else if !errors.Is(err, io.EOF) {
		return nil, yamlError(name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &ScenarioError{File: name, Msg: "empty scenario (want apiVersion, preset, ...)"}
	}
	root = doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &ScenarioError{File: name, Line: root.Line, Msg: "a scenario must be a mapping (apiVersion, preset, ...)"}
	}
	return root, nil
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// yamlError turns the YAML library's error text into a ScenarioError with the line split out.
func yamlError(name string, err error) *ScenarioError {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		if line, convErr := strconv.Atoi(m[1]); convErr == nil {
			return &ScenarioError{File: name, Line: line, Msg: m[2]}
		}
	}
	return &ScenarioError{File: name, Msg: strings.TrimPrefix(msg, "yaml: ")}
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
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
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
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
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

// child returns the value node of key in mapping n, or nil.
func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// item returns the i-th element of sequence n, or nil.
func item(n *yaml.Node, i int) *yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
		return nil
	}
	return n.Content[i]
}

// lineOf is the line of key's value in mapping n, else the line of n itself.
func lineOf(n *yaml.Node, key string) int {
	if c := child(n, key); c != nil {
		return c.Line
	}
	if n != nil {
		return n.Line
	}
	return 0
}

// keyLines lists the keys of mapping n with their lines, in file order.
func keyLines(n *yaml.Node) ([]string, []int) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	var keys []string
	var lines []int
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
		lines = append(lines, n.Content[i].Line)
	}
	return keys, lines
}
