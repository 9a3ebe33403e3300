package labels

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MappingError is a problem in a mapping file, at a line (0 when the file as a whole is
// at fault). Its text is "path:line: message".
type MappingError struct {
	Path string
	Line int
	Msg  string
	// Err is the underlying error, if any (a YAML or regular-expression error).
	Err error
}

// Error implements error.
func (e *MappingError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Unwrap returns the underlying error.
func (e *MappingError) Unwrap() error { return e.Err }

// LoadMapping reads a mapping file (format in docs/labels.md) and returns its rules,
// which take precedence over the built-in defaults. Errors name the file and the line.
func LoadMapping(path string) (Mapping, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Mapping{}, fmt.Errorf("read accelerator mapping %s: %w", path, err)
	}
	return ParseMapping(path, data)
}

// mappingFile is the file's schema; the decoder rejects keys it does not name.
type mappingFile struct {
	Defaults *bool         `yaml:"defaults"`
	Rules    []mappingRule `yaml:"rules"`
}

type mappingRule struct {
	Match mappingMatch `yaml:"match"`
	Class string       `yaml:"class"`
}

type mappingMatch struct {
	Product      string `yaml:"product"`
	ProductRegex string `yaml:"productRegex"`
	DeviceID     string `yaml:"deviceID"`
}

// ParseMapping parses mapping file contents; name is used in errors and rule sources.
// An empty file is the built-in defaults alone.
func ParseMapping(name string, data []byte) (Mapping, error) {
	var file mappingFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		if errors.Is(err, io.EOF) {
			return Mapping{}, nil
		}
		return Mapping{}, yamlError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Mapping{}, &MappingError{Path: name, Line: extra.Line, Msg: "only one YAML document is allowed", Err: err}
	}
	// A second pass keeps the nodes, for the line of each rule.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Mapping{}, yamlError(name, err)
	}
	ruleNodes := mappingValue(documentBody(&root), "rules")

	m := Mapping{NoDefaults: file.Defaults != nil && !*file.Defaults}
	for i, fr := range file.Rules {
		var node *yaml.Node
		if ruleNodes != nil && i < len(ruleNodes.Content) {
			node = ruleNodes.Content[i]
		}
		r, err := compileRule(name, i+1, fr, node)
		if err != nil {
			return Mapping{}, err
		}
		m.Rules = append(m.Rules, r)
	}
	return m, nil
}

// compileRule validates one rule; n is its node, for lines.
func compileRule(path string, index int, fr mappingRule, n *yaml.Node) (Rule, error) {
	matchNode := mappingValue(n, "match")
	fail := func(at *yaml.Node, err error, format string, args ...any) (Rule, error) {
		return Rule{}, &MappingError{Path: path, Line: lineOf(at, n), Err: err,
			Msg: fmt.Sprintf("rule %d: ", index) + fmt.Sprintf(format, args...)}
	}
	r := Rule{Class: fr.Class, Source: fmt.Sprintf("%s:%d", path, lineOf(n, nil))}
	r.Match.Product = strings.TrimSpace(fr.Match.Product)
	if expr := fr.Match.ProductRegex; expr != "" {
		re, err := regexp.Compile(expr)
		if err != nil {
			return fail(mappingValue(matchNode, "productRegex"), err, "productRegex %q: %v", expr, err)
		}
		r.Match.ProductRegex = re
	}
	if id := strings.TrimSpace(fr.Match.DeviceID); id != "" {
		v, err := strconv.ParseUint(id, 0, 32)
		if err != nil || v == 0 {
			return fail(mappingValue(matchNode, "deviceID"), err,
				"deviceID %q: want a PCI device id such as 0x2330 or 0x233010DE", id)
		}
		r.Match.DeviceID = uint32(v)
	}
	if r.Match.IsZero() {
		return fail(firstNonNil(matchNode, n), nil, "match needs product, productRegex or deviceID")
	}
	switch {
	case fr.Class == "":
		return fail(n, nil, "class is missing")
	case !ValidValue(fr.Class):
		return fail(mappingValue(n, "class"), nil,
			"class %q is not a valid label value (at most 63 of [A-Za-z0-9._-], alphanumeric at both ends)", fr.Class)
	}
	return r, nil
}

// documentBody returns the top node of a parsed document.
func documentBody(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		return n.Content[0]
	}
	return n
}

// mappingValue returns the value node of key in mapping node n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
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

func firstNonNil(nodes ...*yaml.Node) *yaml.Node {
	for _, n := range nodes {
		if n != nil {
			return n
		}
	}
	return nil
}

// lineOf is the line of n, else of fallback, else 0.
func lineOf(n, fallback *yaml.Node) int {
	if n != nil {
		return n.Line
	}
	if fallback != nil {
		return fallback.Line
	}
	return 0
}

var (
	yamlLine     = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownField = regexp.MustCompile(`field (\S+) not found in type \S+`)
	// schemaNames replaces the decoder's Go type names with the file's terms.
	schemaNames = strings.NewReplacer(
		"[]labels.mappingRule", "a list of rules",
		"labels.mappingRule", "a rule",
		"labels.mappingMatch", "a match",
		"labels.mappingFile", "a mapping file",
	)
)

// yamlError turns the decoder's error into a MappingError at the first line it names.
func yamlError(path string, err error) error {
	msgs := []string{err.Error()}
	var typeErr *yaml.TypeError
	if errors.As(err, &typeErr) && len(typeErr.Errors) > 0 {
		msgs = typeErr.Errors
	}
	line, parts := 0, make([]string, 0, len(msgs))
	for _, msg := range msgs {
		// The first line becomes the error's line; later ones stay in their message.
		if m := yamlLine.FindStringSubmatch(msg); m != nil && line == 0 {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		} else if m != nil {
			msg = "line " + m[1] + ": " + m[2]
		}
		msg = unknownField.ReplaceAllString(msg, `unknown key "${1}"`)
		msg = schemaNames.Replace(msg)
		parts = append(parts, strings.TrimPrefix(msg, "yaml: "))
	}
	return &MappingError{Path: path, Line: line, Msg: strings.Join(parts, "; "), Err: err}
}
