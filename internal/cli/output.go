package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// Output formats every command that prints data understands. "table" is the text form
// under the name kubectl users type.
const (
	formatText = "text"
	formatJSON = "json"
	formatYAML = "yaml"
)

// outputFlags is -o/--output and its older spelling --json, the same on every command that
// prints data, so that one rule decides what a format means.
type outputFlags struct {
	output string
	json   bool
}

// add registers -o/--output and --json; what names the document printed (for --help).
func (f *outputFlags) add(fs *pflag.FlagSet, what string) {
	fs.StringVarP(&f.output, "output", "o", formatText, "output format: text (or table), json or yaml; json and yaml print "+what)
	fs.BoolVar(&f.json, "json", false, "the same as -o json")
}

// format is the chosen format, or a usage error naming the flag and the bad value.
func (f *outputFlags) format() (string, error) {
	format := f.output
	switch format {
	case "", "table":
		format = formatText
	case formatText, formatJSON, formatYAML:
	default:
		return "", usageErrorf("-o/--output %q: must be text, table, json or yaml", f.output)
	}
	if f.json {
		if format != formatText && format != formatJSON {
			return "", usageErrorf("--json and -o %s: choose one", f.output)
		}
		format = formatJSON
	}
	return format, nil
}

// writeDocument prints v as JSON (indented, one document) or YAML.
func writeDocument(out io.Writer, format string, v any) error {
	switch format {
	case formatJSON:
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("writing the JSON document: %w", err)
		}
		return nil
	case formatYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("rendering the YAML document: %w", err)
		}
		if _, err := out.Write(b); err != nil {
			return fmt.Errorf("writing the YAML document: %w", err)
		}
		return nil
	}
	return fmt.Errorf("output format %q is not a document format", format)
}

// writeStreamItem prints one item of a stream (a finding, a decoded event): a JSON object on
// one line, or a YAML document after a "---" line, so that a reader can start before the end.
func writeStreamItem(out io.Writer, format string, v any) error {
	if format == formatJSON {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("writing the JSON line: %w", err)
		}
		return nil
	}
	if _, err := io.WriteString(out, "---\n"); err != nil {
		return fmt.Errorf("writing the YAML document: %w", err)
	}
	return writeDocument(out, format, v)
}
