package yamlfile

import (
	"iter"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Body returns the top node of a document node; any other node is returned as it is.
func Body(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		return n.Content[0]
	}
	return n
}

// Value returns the value node of key in mapping n; nil when n is not a mapping or lacks
// the key.
func Value(n *yaml.Node, key string) *yaml.Node {
	for k, v := range Pairs(n) {
		if k.Value == key {
			return v
		}
	}
	return nil
}

// Item returns the i-th node of sequence n; nil when n is not a sequence that long.
func Item(n *yaml.Node, i int) *yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
		return nil
	}
	return n.Content[i]
}

// Pairs yields the key and value nodes of mapping n in file order; nothing when n is not a
// mapping.
func Pairs(n *yaml.Node) iter.Seq2[*yaml.Node, *yaml.Node] {
	return func(yield func(k, v *yaml.Node) bool) {
		if n == nil || n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !yield(n.Content[i], n.Content[i+1]) {
				return
			}
		}
	}
}

// Dotted splits a dotted key path ("host.iommu") into path steps.
func Dotted(path string) []any {
	keys := strings.Split(path, ".")
	steps := make([]any, len(keys))
	for i, k := range keys {
		steps[i] = k
	}
	return steps
}

// KeyLine follows path from n (entering a document node first) and returns the line of the
// deepest step it finds: the key's line for a mapping step, the item's for a sequence
// step; 0 when not even the first step is found. A problem with a value is reported at its
// key, which is where a reader looks for it.
func KeyLine(n *yaml.Node, path ...any) int {
	line := 0
	walk(n, path, func(key, value *yaml.Node) {
		if key != nil {
			line = key.Line
		} else {
			line = value.Line
		}
	})
	return line
}

// Find follows path from n (entering a document node first) and returns the value node of
// the deepest step it finds; nil when not even the first step is found.
func Find(n *yaml.Node, path ...any) *yaml.Node {
	var found *yaml.Node
	walk(n, path, func(_, value *yaml.Node) { found = value })
	return found
}

// walk calls step for each step of path found from n, with the key node (nil for a
// sequence index) and the value node, and stops at the first step not found.
func walk(n *yaml.Node, path []any, step func(key, value *yaml.Node)) {
	n = Body(n)
	for _, p := range path {
		var key, value *yaml.Node
		switch s := p.(type) {
		case string:
			for k, v := range Pairs(n) {
				if k.Value == s {
					key, value = k, v
					break
				}
			}
		case int:
			value = Item(n, s)
		}
		if value == nil {
			return
		}
		step(key, value)
		n = value
	}
}

// Line returns the line of the first of nodes that is not nil; 0 when all are nil. It
// reports a problem at a node that may be absent, falling back to its parent.
func Line(nodes ...*yaml.Node) int {
	for _, n := range nodes {
		if n != nil {
			return n.Line
		}
	}
	return 0
}
