package upgrade

import (
	"strings"
	"testing"
)

func TestCheckMatrix(t *testing.T) {
	matrix := []Constraint{{Driver: ">=580.65,<590", Toolkit: "1.17.*"}, {Driver: "570.*", Toolkit: ">=1.16"}}
	nodes := []string{"node-a", "node-b", "node-c"}
	self := Ref{Name: "to-580", Created: t0}
	tests := []struct {
		name    string
		check   func(c *Check)
		reasons []string
		message string
	}{
		{"a target inside a range of the matrix may run", func(*Check) {}, nil, ""},
		{"the operands the target leaves unset are judged at the pool's versions", func(c *Check) {
			c.Pool.Toolkit = "1.18.0"
		}, []string{RefuseVersionMatrix}, "driver 580.95.05, toolkit 1.18.0 matches no entry of versionMatrix: [0] toolkit 1.18.0 is not 1.17.*; [1] driver 580.95.05 is not 570.*"},
		{"a driver past the range is refused and the entries say why", func(c *Check) {
			c.Target.Driver = "590.10"
		}, []string{RefuseVersionMatrix}, "[0] driver 590.10 is not >=580.65,<590"},
		{"an unknown pool version meets no constraint on it", func(c *Check) {
			c.Pool.Toolkit = ""
		}, []string{RefuseVersionMatrix}, "toolkit unknown is not 1.17.*"},
		{"an unreadable matrix entry is refused by its index", func(c *Check) {
			c.Matrix = []Constraint{{Driver: "580.*.1"}}
		}, []string{RefuseVersionMatrix}, "versionMatrix[0]: driver constraint"},
		{"a pool without nodes is refused", func(c *Check) {
			c.Nodes = nil
		}, []string{RefuseNoNodes}, "the pool has no member nodes"},
		{"an older running upgrade on the same nodes refuses this one and names them", func(c *Check) {
			c.Others = []Other{{Ref: Ref{Name: "to-575", Created: t0.Add(-1)}, Nodes: []string{"node-c", "node-b", "node-z"}}}
		}, []string{RefuseOverlap}, "StackUpgrade to-575 is still running on 2 nodes of this pool (node-b, node-c)"},
		{"a newer upgrade on the same nodes does not refuse the older one", func(c *Check) {
			c.Others = []Other{{Ref: Ref{Name: "to-575", Created: t0.Add(1)}, Nodes: nodes}}
		}, nil, ""},
		{"an older upgrade on other nodes does not refuse this one", func(c *Check) {
			c.Others = []Other{{Ref: Ref{Name: "a100", Created: t0.Add(-1)}, Nodes: []string{"node-x"}}}
		}, nil, ""},
		{"every refusal is given at once", func(c *Check) {
			c.Target.Driver, c.Nodes = "600.1", nil
		}, []string{RefuseVersionMatrix, RefuseNoNodes}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Check{Self: self, Target: target, Pool: oldStack, Matrix: matrix, Nodes: nodes}
			tt.check(&c)
			got := CheckMatrix(c)
			var reasons []string
			var msgs []string
			for _, r := range got {
				reasons = append(reasons, r.Reason)
				msgs = append(msgs, r.Message)
			}
			if strings.Join(reasons, ",") != strings.Join(tt.reasons, ",") {
				t.Fatalf("refusals = %+v, want reasons %v", got, tt.reasons)
			}
			if !strings.Contains(strings.Join(msgs, "\n"), tt.message) {
				t.Errorf("messages = %q, want one to contain %q", msgs, tt.message)
			}
		})
	}
}

func TestSatisfies(t *testing.T) {
	tests := []struct {
		name, version, expr string
		want                bool
	}{
		{"an exact version matches itself", "580.95.05", "580.95.05", true},
		{"an exact version matches the same numbers written with fewer zeros", "580.95.5", "580.95.05", true},
		{"an exact version does not match a longer one", "580.95.05", "580.95", false},
		{"a wildcard matches every version under its prefix", "580.95.05", "580.*", true},
		{"a wildcard does not match the next major", "590.1", "580.*", false},
		{"a range matches inside", "580.95.05", ">=580.65,<590", true},
		{"a range excludes its upper bound", "590", ">=580.65,<590", false},
		{"a leading v is ignored on both sides", "v0.9.1", ">=0.9.0", true},
		{"a pre-release suffix is ignored", "1.18.0-rc.1", "=1.18.0", true},
		{"an unknown version matches no constraint", "", ">=1", false},
		{"a version that is no number matches no constraint", "dev", ">=0.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Satisfies(tt.version, tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Satisfies(%q, %q) = %v, want %v", tt.version, tt.expr, got, tt.want)
			}
		})
	}
}

func TestSatisfiesRefusesConstraintsItCannotRead(t *testing.T) {
	for _, expr := range []string{"*", ">=580.*", "580.*.1", ">=abc", ""} {
		if _, err := Satisfies("580.95.05", expr); err == nil {
			t.Errorf("Satisfies(_, %q) took it, want an error", expr)
		}
	}
}
