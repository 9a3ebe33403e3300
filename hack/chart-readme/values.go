package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// schema is the part of values.schema.json the README needs: which objects have listed
// properties (described key by key), through $ref and allOf.
type schema struct {
	Ref         string             `json:"$ref"`
	Properties  map[string]*schema `json:"properties"`
	AllOf       []*schema          `json:"allOf"`
	Definitions map[string]*schema `json:"definitions"`
}

// resolve follows s's $ref (into root's definitions) and allOf to the schema that lists
// properties, or nil.
func (root *schema) resolve(s *schema) *schema {
	for depth := 0; s != nil && depth < 8; depth++ {
		switch {
		case s.Properties != nil:
			return s
		case s.Ref != "":
			s = root.Definitions[strings.TrimPrefix(s.Ref, "#/definitions/")]
		case len(s.AllOf) == 1:
			s = s.AllOf[0]
		default:
			return nil
		}
	}
	return nil
}

// writeValues writes one section per top-level value, with an entry for each value under it.
func writeValues(b *bytes.Buffer, top *yaml.Node, root *schema) error {
	for i := 0; i+1 < len(top.Content); i += 2 {
		key, val := top.Content[i], top.Content[i+1]
		fmt.Fprintf(b, "\n### `%s`\n\n", key.Value)
		if text := comment(key.HeadComment, i == 0); text != "" {
			b.WriteString(text + "\n\n")
		}
		if err := writeEntries(b, key.Value, key, val, root, root.resolve(root.Properties[key.Value])); err != nil {
			return err
		}
	}
	return nil
}

// writeEntries writes the entries of the value path (key, val): one, or one for each key of
// an object whose schema lists its properties.
func writeEntries(b *bytes.Buffer, path string, key, val *yaml.Node, root, s *schema) error {
	if val.Kind == yaml.MappingNode && s != nil && len(val.Content) > 0 {
		if text := comment(key.HeadComment, false); text != "" && strings.Contains(path, ".") {
			fmt.Fprintf(b, "- **`%s`**: %s\n", path, strings.TrimPrefix(indent(text), "  "))
		}
		for i := 0; i+1 < len(val.Content); i += 2 {
			k, v := val.Content[i], val.Content[i+1]
			child := path + "." + k.Value
			if err := writeEntries(b, child, k, v, root, root.resolve(s.Properties[k.Value])); err != nil {
				return err
			}
		}
		if text := comment(val.Content[len(val.Content)-1].FootComment, false); text != "" {
			b.WriteString(indent(text) + "\n")
		}
		return nil
	}
	def, err := defaultOf(val)
	if err != nil {
		return fmt.Errorf("the default of %s: %w", path, err)
	}
	fmt.Fprintf(b, "- **`%s`** (default `%s`)", path, def)
	text := comment(key.HeadComment, false)
	if strings.Count(path, ".") == 0 {
		text = "" // a top-level value's comment is its section's
	}
	if text != "" {
		b.WriteString(": " + strings.TrimPrefix(indent(text), "  "))
	}
	b.WriteString("\n")
	return nil
}

// defaultOf is a value's default as one line: a scalar as YAML writes it ("" for an empty
// string), anything else as compact JSON.
func defaultOf(n *yaml.Node) (string, error) {
	if n.Kind == yaml.ScalarNode {
		if n.Value == "" {
			return `""`, nil
		}
		return n.Value, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return "", err
	}
	out, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// comment turns a YAML comment into Markdown: the "# " prefixes removed, prose lines joined
// into paragraphs and more-indented lines (examples) into a YAML code block. first drops the
// file's opening paragraph (about the file itself, not a value).
func comment(c string, first bool) string {
	if c == "" {
		return ""
	}
	blocks := strings.Split(c, "\n\n")
	if first && len(blocks) > 1 {
		blocks = blocks[1:]
	}
	var out []string
	for _, block := range blocks {
		out = append(out, paragraphs(block)...)
	}
	return strings.Join(out, "\n\n")
}

func paragraphs(block string) []string {
	var out, prose, code []string
	flush := func() {
		if len(prose) > 0 {
			out = append(out, strings.Join(prose, " "))
			prose = nil
		}
		if len(code) > 0 {
			out = append(out, "```yaml\n"+strings.Join(code, "\n")+"\n```")
			code = nil
		}
	}
	for line := range strings.SplitSeq(block, "\n") {
		text := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(line), "#"), " ")
		if strings.HasPrefix(text, "  ") {
			if len(code) == 0 {
				flush()
			}
			code = append(code, strings.TrimPrefix(text, "  "))
			continue
		}
		if len(code) > 0 || text == "" {
			flush()
		}
		if text != "" {
			prose = append(prose, text)
		}
	}
	flush()
	return out
}

// indent puts a description under its list item: every line after the first two spaces in.
func indent(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}
