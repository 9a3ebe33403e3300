package accept

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Constraint is one alternative of a version matrix entry: every comparison must hold.
// Syntax: comma-separated comparisons, each an operator (>=, >, <=, <, =) and a dotted
// version; a bare version or one ending in ".x" matches that prefix ("580.95", "13.x").
// Missing numbers compare as zero ("12" = "12.0"), so "<=13" excludes 13.1: write "<=13.x".
// A version with a suffix ("6.8.0-45-generic") is matched as text: "=" exactly, bare as a
// prefix that ends at a separator; ordering operators take dotted numbers only.
type Constraint struct {
	text  string
	comps []comparison
}

type comparison struct {
	op  string
	ver []int
	// exact is the whole version text when it carries a suffix; it is then matched as text.
	exact string
}

// constraintVersion is a constraint's version: dotted numbers, then an optional suffix
// that starts with a separator ("-45-generic", "+build", "~ds1").
var constraintVersion = regexp.MustCompile(`^v?([0-9]+(?:\.[0-9]+)*)([-+~_][0-9A-Za-z.+~_-]*)?$`)

// ParseConstraint parses one alternative.
func ParseConstraint(s string) (Constraint, error) {
	c := Constraint{text: strings.TrimSpace(s)}
	if c.text == "" {
		return c, fmt.Errorf("empty version constraint")
	}
	for _, part := range strings.Split(c.text, ",") {
		cmp, err := parseComparison(strings.TrimSpace(part))
		if err != nil {
			return c, fmt.Errorf("version constraint %q: %w", s, err)
		}
		c.comps = append(c.comps, cmp)
	}
	return c, nil
}

func parseComparison(part string) (comparison, error) {
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
	part, wild := strings.CutSuffix(part, ".x")
	m := constraintVersion.FindStringSubmatch(part)
	if m == nil {
		if part == "" {
			return comparison{}, fmt.Errorf("no version number")
		}
		return comparison{}, fmt.Errorf("%q is not a dotted version number", part)
	}
	v, err := parseVersion(m[1])
	if err != nil {
		return comparison{}, err
	}
	if m[2] != "" {
		if wild || (op != "=" && op != "prefix") {
			return comparison{}, fmt.Errorf("%q: a version with a suffix (%q) can only be matched exactly (=) or as a prefix", part, m[2])
		}
		return comparison{op: op, ver: v, exact: strings.TrimPrefix(part, "v")}, nil
	}
	if wild {
		// "13.x" is every 13.*: "=13.x" is the prefix, "<=13.x" is "<14", ">13.x" is ">=14".
		switch op {
		case "=":
			op = "prefix"
		case "<=":
			op, v = "<", bumpLast(v)
		case ">":
			op, v = ">=", bumpLast(v)
		}
	}
	return comparison{op: op, ver: v}, nil
}

// bumpLast returns v with its last number one higher: [13] -> [14], [6 8] -> [6 9].
func bumpLast(v []int) []int {
	out := slices.Clone(v)
	out[len(out)-1]++
	return out
}

// matchText matches a comparison with a suffix against the version's text.
func (cmp comparison) matchText(version string) bool {
	version = strings.TrimPrefix(strings.TrimSpace(version), "v")
	if cmp.op == "=" || version == cmp.exact {
		return version == cmp.exact
	}
	rest, ok := strings.CutPrefix(version, cmp.exact)
	return ok && strings.ContainsAny(rest[:1], "-+~_. ")
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
		switch {
		case cmp.exact != "":
			ok = cmp.matchText(version)
		case cmp.op == "prefix":
			ok = len(v) >= len(cmp.ver) && compare(v[:len(cmp.ver)], cmp.ver) == 0
		case cmp.op == "=":
			ok = compare(v, cmp.ver) == 0
		case cmp.op == ">=":
			ok = compare(v, cmp.ver) >= 0
		case cmp.op == ">":
			ok = compare(v, cmp.ver) > 0
		case cmp.op == "<=":
			ok = compare(v, cmp.ver) <= 0
		case cmp.op == "<":
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
