package labels

import (
	"slices"
	"strings"
)

// Format writes labels as sorted "key=value" lines, one per label, each ending in a
// newline (the empty set gives ""). Keys sort bytewise, so the output is stable.
func Format(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(labels[k])
		b.WriteByte('\n')
	}
	return b.String()
}
