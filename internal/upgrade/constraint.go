package upgrade

import (
	"fmt"
	"strings"
)

// Constraint is one allowed combination of the version matrix: each field an exact
// version ("580.95.05"), a wildcard ("580.*") or comparisons separated by commas
// (">=580.65.06,<590"); "" allows any version.
type Constraint struct {
	Driver  string `json:"driver,omitempty"`
	Toolkit string `json:"toolkit,omitempty"`
	Agent   string `json:"agent,omitempty"`
}

// Allows says whether v satisfies c; when not, why (the first component that does not).
func (c Constraint) Allows(v Versions) (bool, string, error) {
	for _, f := range []struct{ name, want, have string }{
		{"driver", c.Driver, v.Driver}, {"toolkit", c.Toolkit, v.Toolkit}, {"agent", c.Agent, v.Agent},
	} {
		if f.want == "" {
			continue
		}
		ok, err := Satisfies(f.have, f.want)
		if err != nil {
			return false, "", fmt.Errorf("%s constraint: %w", f.name, err)
		}
		if !ok {
			have := f.have
			if have == "" {
				have = "unknown"
			}
			return false, fmt.Sprintf("%s %s is not %s", f.name, have, f.want), nil
		}
	}
	return true, "", nil
}

// Satisfies says whether version v meets constraint expr (see Constraint). An unknown or
// unparsable v meets no constraint; a constraint that cannot be read is an error.
func Satisfies(v, expr string) (bool, error) {
	have, verr := parseVersion(v)
	for term := range strings.SplitSeq(expr, ",") {
		term = strings.TrimSpace(term)
		op := ""
		for _, o := range []string{">=", "<=", ">", "<", "="} {
			if strings.HasPrefix(term, o) {
				op, term = o, strings.TrimSpace(term[len(o):])
				break
			}
		}
		if strings.Contains(term, "*") {
			if op != "" && op != "=" {
				return false, fmt.Errorf("%q: a wildcard takes no comparison", expr)
			}
			prefix, err := parseVersion(strings.TrimSuffix(strings.TrimSuffix(term, "*"), "."))
			if err != nil || !strings.HasSuffix(term, ".*") {
				return false, fmt.Errorf("%q: a wildcard ends a version, as in 580.*", expr)
			}
			if verr != nil || len(have) < len(prefix) || compare(have[:len(prefix)], prefix) != 0 {
				return false, nil
			}
			continue
		}
		want, err := parseVersion(term)
		if err != nil {
			return false, fmt.Errorf("%q: %w", expr, err)
		}
		if verr != nil {
			return false, nil
		}
		c := compare(have, want)
		ok := map[string]bool{"": c == 0, "=": c == 0, ">=": c >= 0, "<=": c <= 0, ">": c > 0, "<": c < 0}[op]
		if !ok {
			return false, nil
		}
	}
	return true, nil
}
