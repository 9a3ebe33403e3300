package labels

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestLoadMappingReadsTheExampleFile(t *testing.T) {
	m, err := LoadMapping("testdata/mapping.yaml")
	if err != nil {
		t.Fatalf("LoadMapping: %v", err)
	}
	tests := []struct {
		name     string
		product  string
		deviceID uint32
		want     string
	}{
		{"the file's product rule overrides the default", "NVIDIA H100 80GB HBM3", 0x233010DE, "h100-sxm-80g"},
		{"the file's device id rule overrides the default", "NVIDIA H100 PCIe", 0x233110DE, "h100-pcie-80g"},
		{"the file's pattern adds a model", "NVIDIA H20", 0x232910DE, "h20-96g"},
		{"models the file does not name keep their default", "NVIDIA H200", 0x233510DE, "h200-141g"},
		{"models nobody names get the derived class", "NVIDIA A10", 0x223610DE, "a10-22g"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.Class(device(tt.product, 23028, tt.deviceID)); got != tt.want {
				t.Errorf("Class(%q) = %q, want %q", tt.product, got, tt.want)
			}
		})
	}
	if src := m.Rules[1].Source; src != "testdata/mapping.yaml:7" {
		t.Errorf("second rule's source = %q, want testdata/mapping.yaml:7", src)
	}
}

func TestLoadMappingOfAMissingFileNamesIt(t *testing.T) {
	_, err := LoadMapping("testdata/no-such-mapping.yaml")
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "testdata/no-such-mapping.yaml") {
		t.Fatalf("LoadMapping = %v, want a not-exist error naming the file", err)
	}
}

func TestParseMappingOptions(t *testing.T) {
	tests := []struct {
		name       string
		yaml       string
		rules      int
		noDefaults bool
	}{
		{"an empty file is the defaults alone", "", 0, false},
		{"a file of comments is the defaults alone", "# nothing yet\n", 0, false},
		{"defaults false drops the built-in rules", "defaults: false\n", 0, true},
		{"defaults true keeps them", "defaults: true\nrules: []\n", 0, false},
		{"a quoted device id is accepted", "rules:\n  - match: {deviceID: \"0x2330\"}\n    class: a\n", 1, false},
		{"a decimal device id is accepted", "rules:\n  - match: {deviceID: 9008}\n    class: a\n", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseMapping("m.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatalf("ParseMapping: %v", err)
			}
			if len(m.Rules) != tt.rules || m.NoDefaults != tt.noDefaults {
				t.Errorf("got %d rules, NoDefaults %v; want %d, %v", len(m.Rules), m.NoDefaults, tt.rules, tt.noDefaults)
			}
		})
	}
}

func TestParseMappingErrorsNameFileAndLine(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // the error starts with it
	}{
		{"an unknown top-level key", "defaults: true\nrule:\n  - class: a\n", `m.yaml:2: unknown key "rule"`},
		{"an unknown key inside a match", "rules:\n  - match:\n      name: NVIDIA H100\n    class: a\n", `m.yaml:3: unknown key "name"`},
		{"an unknown key in a rule", "rules:\n  - match: {product: x}\n    class: a\n    family: hopper\n", `m.yaml:4: unknown key "family"`},
		{"a YAML syntax error", "rules:\n  - match: {product: x\n    class: a\n", "m.yaml:"},
		{"rules that are not a list", "rules: h100\n", "m.yaml:1: cannot unmarshal !!str `h100` into a list of rules"},
		{"an invalid regular expression", "rules:\n  - match:\n      productRegex: \"(H100\"\n    class: a\n", `m.yaml:3: rule 1: productRegex "(H100"`},
		{"a device id that is not a number", "rules:\n  - match: {deviceID: H100}\n    class: a\n", `m.yaml:2: rule 1: deviceID "H100"`},
		{"a device id of zero", "rules:\n  - match: {deviceID: 0}\n    class: a\n", `m.yaml:2: rule 1: deviceID "0"`},
		{"a rule without a match", "rules:\n  - class: a\n  - class: b\n", "m.yaml:2: rule 1: match needs product"},
		{"a rule with an empty match", "rules:\n  - match: {}\n    class: a\n", "m.yaml:2: rule 1: match needs product"},
		{"a rule without a class", "rules:\n  - match: {product: x}\n  - match: {product: y}\n    class: b\n", "m.yaml:2: rule 1: class is missing"},
		{"a class that is not a label value", "rules:\n  - match: {product: x}\n    class: ok\n  - match: {product: y}\n    class: \"H100 SXM\"\n",
			`m.yaml:5: rule 2: class "H100 SXM" is not a valid label value`},
		{"a second YAML document", "rules: []\n---\nrules: []\n", "m.yaml:2: only one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMapping("m.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("ParseMapping succeeded, want an error starting %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to start with %q", err, tt.want)
			}
			var me *MappingError
			if !errors.As(err, &me) || me.Path != "m.yaml" || me.Line == 0 {
				t.Errorf("error %v: want a *MappingError with path m.yaml and a line", err)
			}
		})
	}
}
