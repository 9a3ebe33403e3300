package accept

import (
	"fmt"
	"strconv"
	"strings"
)

// Constraint is one alternative of a version matrix entry: every comparison must hold.
// Syntax: comma-separated comparisons, each an operator (>=, >, <=, <, =) and a dotted
// version; a bare version or one ending in ".x" matches that prefix ("580.95", "13.x").
type Constraint struct {
	text  string
	comps []comparison
}

type comparison struct {
	op  string
	ver []int
}

// String returns the constraint as written.
func (c Constraint) String() string { return c.text }

// ParseConstraint parses one alternative.
func ParseConstraint(s string) (Constraint, error) {
	c := Constraint{text: strings.TrimSpace(s)}
	if c.text == "" {
		return c, fmt.Errorf("empty version constraint")
	}
	for _, part := range strings.Split(c.text, ",") {
		part = strings.TrimSpace(part)
		op := "prefix"
		for _, o := range []string{">=", "<=", "==", ">", "<", "="} {
			if rest, ok := strings.CutPrefix(part, o); ok {
				op, part = o, strings.TrimSpace(rest)
				break
			}
		}
		if op == "==" {
			op = "="
		}
		part = strings.TrimSuffix(part, ".x")
		v, err := parseVersion(part)
		if err != nil {
			return c, fmt.Errorf("version constraint %q: %w", s, err)
		}
		c.comps = append(c.comps, comparison{op: op, ver: v})
	}
	return c, nil
}

// parseVersion reads the leading dotted numbers: "6.8.0-45-generic" -> [6 8 0].
func parseVersion(s string) ([]int, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(s, "-+ ~_"); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return nil, fmt.Errorf("no version number")
	}
	parts := strings.Split(s, ".")
	out := make([]int, 0, len(parts))
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a dotted version number", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func compare(a, b []int) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Match reports whether version satisfies the constraint.
func (c Constraint) Match(version string) bool {
	v, err := parseVersion(version)
	if err != nil {
		return false
	}
	for _, cmp := range c.comps {
		var ok bool
		switch cmp.op {
		case "prefix":
			ok = len(v) >= len(cmp.ver) && compare(v[:len(cmp.ver)], cmp.ver) == 0
		case "=":
			ok = compare(v, cmp.ver) == 0
		case ">=":
			ok = compare(v, cmp.ver) >= 0
		case ">":
			ok = compare(v, cmp.ver) > 0
		case "<=":
			ok = compare(v, cmp.ver) <= 0
		case "<":
			ok = compare(v, cmp.ver) < 0
		}
		if !ok {
			return false
		}
	}
	return true
}

// MatchAny reports whether version satisfies at least one alternative. An empty list
// matches everything. Alternatives were validated when the policy was loaded.
func MatchAny(alternatives []string, version string) bool {
	if len(alternatives) == 0 {
		return true
	}
	for _, a := range alternatives {
		c, err := ParseConstraint(a)
		if err == nil && c.Match(version) {
			return true
		}
	}
	return false
}
