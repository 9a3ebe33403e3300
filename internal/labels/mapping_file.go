package labels

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpunode/gpunode/internal/yamlfile"
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
	data, err := yamlfile.ReadFile(path)
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
	root, err := yamlfile.Decode(name, data, &file)
	if errors.Is(err, yamlfile.ErrEmpty) {
		return Mapping{}, nil
	}
	if err != nil {
		return Mapping{}, yamlError(name, err)
	}
	// A second document, or one that does not parse, is refused: it would be ignored.
	switch extra, err := yamlfile.Rest(name, data); {
	case len(extra) > 0:
		return Mapping{}, &MappingError{Path: name, Line: extra[0].Line, Msg: "only one YAML document is allowed"}
	case err != nil:
		return Mapping{}, &MappingError{Path: name, Msg: "only one YAML document is allowed", Err: errors.Unwrap(err)}
	}
	ruleNodes := yamlfile.Find(root, "rules")

	m := Mapping{NoDefaults: file.Defaults != nil && !*file.Defaults}
	for i, fr := range file.Rules {
		r, err := compileRule(name, i+1, fr, yamlfile.Item(ruleNodes, i))
		if err != nil {
			return Mapping{}, err
		}
		m.Rules = append(m.Rules, r)
	}
	return m, nil
}

// compileRule validates one rule; n is its node, for lines.
func compileRule(path string, index int, fr mappingRule, n *yaml.Node) (Rule, error) {
	matchNode := yamlfile.Value(n, "match")
	fail := func(at *yaml.Node, err error, format string, args ...any) (Rule, error) {
		return Rule{}, &MappingError{Path: path, Line: yamlfile.Line(at, n), Err: err,
			Msg: fmt.Sprintf("rule %d: ", index) + fmt.Sprintf(format, args...)}
	}
	r := Rule{Class: fr.Class, Source: fmt.Sprintf("%s:%d", path, yamlfile.Line(n))}
	r.Match.Product = strings.TrimSpace(fr.Match.Product)
	if expr := fr.Match.ProductRegex; expr != "" {
		re, err := regexp.Compile(expr)
		if err != nil {
			return fail(yamlfile.Value(matchNode, "productRegex"), err, "productRegex %q: %v", expr, err)
		}
		r.Match.ProductRegex = re
	}
	if id := strings.TrimSpace(fr.Match.DeviceID); id != "" {
		v, err := strconv.ParseUint(id, 0, 32)
		if err != nil || v == 0 {
			return fail(yamlfile.Value(matchNode, "deviceID"), err,
				"deviceID %q: want a PCI device id such as 0x2330 or 0x233010DE", id)
		}
		r.Match.DeviceID = uint32(v)
	}
	if r.Match.IsZero() {
		return fail(cmp.Or(matchNode, n), nil, "match needs product, productRegex or deviceID")
	}
	switch {
	case fr.Class == "":
		return fail(n, nil, "class is missing")
	case !ValidValue(fr.Class):
		return fail(yamlfile.Value(n, "class"), nil,
			"class %q is not a valid label value (at most 63 of [A-Za-z0-9._-], alphanumeric at both ends)", fr.Class)
	}
	return r, nil
}

var (
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
	problems := yamlfile.Problems(err)
	line, parts := 0, make([]string, 0, len(problems))
	for _, p := range problems {
		msg := p.Msg
		// The first line becomes the error's line; later ones stay in their message.
		if p.Line > 0 && line == 0 {
			line = p.Line
		} else if p.Line > 0 {
			msg = "line " + strconv.Itoa(p.Line) + ": " + msg
		}
		msg = unknownField.ReplaceAllString(msg, `unknown key "${1}"`)
		parts = append(parts, schemaNames.Replace(msg))
	}
	return &MappingError{Path: path, Line: line, Msg: strings.Join(parts, "; "), Err: errors.Unwrap(err)}
}
