package yamlfile

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// sample has a key on each line, so a line names the node it is on.
const sample = `version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
    - name: nvidia.com/mig-1g.10gb
      replicas: 2
flags: {migStrategy: mixed}
list:
  - a
`

func sampleDoc(t *testing.T) *yaml.Node {
	t.Helper()
	doc, err := Parse("s.yaml", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestKeyLineFindsTheKeyOfAPath(t *testing.T) {
	doc := sampleDoc(t)
	tests := []struct {
		name string
		path []any
		want int
	}{
		{"a top-level key is on its line", []any{"version"}, 1},
		{"a section is reported at its key, not at its first child", []any{"sharing"}, 2},
		{"a key inside a list item is on its own line", []any{"sharing", "timeSlicing", "resources", 1, "replicas"}, 8},
		{"a list item is on the line it starts", []any{"sharing", "timeSlicing", "resources", 1}, 7},
		{"a key in a flow mapping is on its line", []any{"flags", "migStrategy"}, 9},
		{"a missing key falls back to the deepest key found", []any{"sharing", "timeSlicing", "mps"}, 3},
		{"an index past the end falls back to its list", []any{"sharing", "timeSlicing", "resources", 5, "name"}, 4},
		{"a key below a scalar falls back to the scalar's key", []any{"version", "major"}, 1},
		{"a path that finds nothing has no line", []any{"nothing"}, 0},
		{"an empty path has no line", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := KeyLine(doc, tt.path...); got != tt.want {
				t.Errorf("KeyLine(%v) = %d, want %d", tt.path, got, tt.want)
			}
		})
	}
}

func TestFindReturnsTheDeepestValue(t *testing.T) {
	doc := sampleDoc(t)
	tests := []struct {
		name     string
		path     []any
		wantLine int
		wantKind yaml.Kind
	}{
		{"a section's value starts on the line after its key", []any{"sharing"}, 3, yaml.MappingNode},
		{"a list's value starts at its first item", []any{"list"}, 11, yaml.SequenceNode},
		{"a scalar value is on its key's line", Dotted("flags.migStrategy"), 9, yaml.ScalarNode},
		{"a missing key gives the deepest value found", []any{"sharing", "timeSlicing", "resources", 0, "rename"}, 5, yaml.MappingNode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := Find(doc, tt.path...)
			if n == nil || n.Line != tt.wantLine || n.Kind != tt.wantKind {
				t.Errorf("Find(%v) = %+v, want a node of kind %v at line %d", tt.path, n, tt.wantKind, tt.wantLine)
			}
		})
	}
	if n := Find(doc, "nothing"); n != nil {
		t.Errorf("Find(nothing) = %+v, want nil", n)
	}
}

func TestNodeHelpersAreSafeOnTheWrongKindOfNode(t *testing.T) {
	doc := sampleDoc(t)
	body := Body(doc)
	list := Find(doc, "list")
	tests := []struct {
		name string
		got  *yaml.Node
		want string // the value of the node, "<nil>" for none
	}{
		{"Body enters a document", Value(body, "version"), "v1"},
		{"Value reads a mapping", Value(Value(body, "flags"), "migStrategy"), "mixed"},
		{"Value of a list is nil", Value(list, "a"), "<nil>"},
		{"Value of nil is nil", Value(nil, "a"), "<nil>"},
		{"Item reads a list", Item(list, 0), "a"},
		{"Item past the end is nil", Item(list, 1), "<nil>"},
		{"Item before the start is nil", Item(list, -1), "<nil>"},
		{"Item of a mapping is nil", Item(body, 0), "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := "<nil>"
			if tt.got != nil {
				got = tt.got.Value
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if Body(nil) != nil || Body(body) != body {
		t.Error("Body changed a node that is not a document")
	}
}

func TestPairsYieldsKeysInFileOrder(t *testing.T) {
	var keys []string
	for k, v := range Pairs(Body(sampleDoc(t))) {
		if v == nil {
			t.Fatalf("key %s has no value", k.Value)
		}
		keys = append(keys, k.Value)
		if k.Value == "flags" {
			break // stopping early must be safe
		}
	}
	if got := strings.Join(keys, ","); got != "version,sharing,flags" {
		t.Errorf("keys = %s, want version,sharing,flags", got)
	}
	for range Pairs(Find(sampleDoc(t), "list")) {
		t.Error("Pairs of a list yielded a pair")
	}
}

func TestLineFallsBackToTheNextNode(t *testing.T) {
	doc := sampleDoc(t)
	tests := []struct {
		name  string
		nodes []*yaml.Node
		want  int
	}{
		{"the first node's line", []*yaml.Node{Find(doc, "flags"), Body(doc)}, 9},
		{"an absent node falls back to the next", []*yaml.Node{Find(doc, "nothing"), Find(doc, "list")}, 11},
		{"no node has no line", []*yaml.Node{nil, nil}, 0},
		{"no nodes at all have no line", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Line(tt.nodes...); got != tt.want {
				t.Errorf("Line = %d, want %d", got, tt.want)
			}
		})
	}
}
