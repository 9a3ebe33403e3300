package upgrade

import (
	"fmt"
	"strconv"
	"strings"
)

// Versions is one set of operand versions; "" is unknown (or, in a target, unchanged).
type Versions struct {
	Driver    string `json:"driver,omitempty"`
	Toolkit   string `json:"toolkit,omitempty"`
	Agent     string `json:"agent,omitempty"`
	NodeImage string `json:"nodeImage,omitempty"`
}

// Over is v with the fields of t that are set: the versions after an upgrade to t.
func (v Versions) Over(t Versions) Versions {
	for _, f := range []struct {
		dst *string
		src string
	}{
		{&v.Driver, t.Driver}, {&v.Toolkit, t.Toolkit}, {&v.Agent, t.Agent}, {&v.NodeImage, t.NodeImage},
	} {
		if f.src != "" {
			*f.dst = f.src
		}
	}
	return v
}

// Reaches says whether a node running v runs every version target sets.
func (v Versions) Reaches(target Versions) bool {
	return (target.Driver == "" || sameVersion(v.Driver, target.Driver)) &&
		(target.Toolkit == "" || sameVersion(v.Toolkit, target.Toolkit)) &&
		(target.Agent == "" || sameVersion(v.Agent, target.Agent)) &&
		(target.NodeImage == "" || v.NodeImage == target.NodeImage)
}

// String is the versions in one line, e.g. "driver 580.95.05, toolkit 1.18.0".
func (v Versions) String() string {
	var parts []string
	for _, f := range []struct{ name, v string }{
		{"driver", v.Driver}, {"toolkit", v.Toolkit}, {"agent", v.Agent}, {"node image", v.NodeImage},
	} {
		if f.v != "" {
			parts = append(parts, f.name+" "+f.v)
		}
	}
	if len(parts) == 0 {
		return "no versions"
	}
	return strings.Join(parts, ", ")
}

func sameVersion(a, b string) bool {
	if a == b {
		return true
	}
	pa, errA := parseVersion(a)
	pb, errB := parseVersion(b)
	return errA == nil && errB == nil && compare(pa, pb) == 0 && len(pa) == len(pb)
}

// parseVersion reads "v0.9.0", "580.95.05" or "1.18.0-rc1" as numbers (a pre-release or
// build suffix is ignored).
func parseVersion(s string) ([]int, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(t, "-+"); i >= 0 {
		t = t[:i]
	}
	if t == "" {
		return nil, fmt.Errorf("version %q: empty", s)
	}
	var out []int
	for p := range strings.SplitSeq(t, ".") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("version %q: %q is not a number", s, p)
		}
		out = append(out, n)
	}
	return out, nil
}

// compare orders versions segment by segment, a missing segment counting as 0.
func compare(a, b []int) int {
	for i := range max(len(a), len(b)) {
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
