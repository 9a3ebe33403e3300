package accept

import (
	"strings"
	"testing"
)

func TestConstraintMatch(t *testing.T) {
	tests := []struct {
		name       string
		constraint string
		version    string
		want       bool
	}{
		{"a newer driver satisfies a minimum", ">=550.54", "580.95.05", true},
		{"the minimum itself satisfies a minimum", ">=550.54", "550.54", true},
		{"a patch release of the minimum satisfies it", ">=550.54", "550.54.15", true},
		{"an older branch misses a minimum", ">=550.54", "535.183.01", false},
		{"an older release of the same branch misses a minimum", ">=550.54", "550.40.07", false},
		{"numbers compare as numbers, not as text", ">=550.54", "1000.1", true},
		{"a release below a ceiling matches", "<600", "580.95.05", true},
		{"the ceiling itself misses a strict ceiling", "<600", "600", false},
		{"a patch of the ceiling misses a strict ceiling", "<600", "600.0.1", false},
		{"a version inside a range matches", ">=550,<600", "570.86.10", true},
		{"a version above a range misses", ">=550,<600", "600.1", false},
		{"a version below a range misses", ">=550,<600", "549.9", false},
		{"spaces around a range are allowed", " >= 550 , < 600 ", "560", true},
		{"an exact version matches itself", "=580.95.05", "580.95.05", true},
		{"an exact version ignores leading zeros", "=580.95.05", "580.95.5", true},
		{"an exact version misses the next patch", "=580.95.05", "580.95.06", false},
		{"an exact version misses a shorter version", "=580.95.05", "580.95", false},
		{"a double equals sign is an exact version too", "==580.95.05", "580.95.05", true},
		{"a bare version is a prefix of a longer one", "580.95", "580.95.05", true},
		{"a bare version matches itself", "580.95", "580.95", true},
		{"a bare version misses a different minor", "580.95", "580.9", false},
		{"a bare version does not match a number that only starts the same", "580.95", "580.950.1", false},
		{"a bare version misses a shorter version", "580.95", "580", false},
		{"an x wildcard matches the major release", "13.x", "13.0", true},
		{"an x wildcard matches any minor", "13.x", "13.2.1", true},
		{"an x wildcard misses the previous major", "13.x", "12.9", false},
		{"an x wildcard misses the next major", "13.x", "14.0", false},
		{"an x wildcard does not match a number that only starts the same", "13.x", "130.0", false},
		{"an exact x wildcard is a prefix", "=13.x", "13.1", true},
		{"at most an x wildcard includes every minor", "<=13.x", "13.4", true},
		{"at most an x wildcard excludes the next major", "<=13.x", "14.0", false},
		{"above an x wildcard excludes every minor", ">13.x", "13.9", false},
		{"above an x wildcard includes the next major", ">13.x", "14.0", true},
		{"at most a bare major excludes its minors", "<=13", "13.1", false},
		{"a kernel release matches its major.minor prefix", "6.8", "6.8.0-45-generic", true},
		{"a kernel prefix does not match a longer minor", "6.8", "6.18.0-1-aws", false},
		{"a kernel minimum compares numbers", ">=6.8", "6.18.0-1-aws", true},
		{"a kernel maximum excludes a newer kernel", "<6.9", "6.18.0-1-aws", false},
		{"an exact kernel release with its suffix matches itself", "=6.8.0-45-generic", "6.8.0-45-generic", true},
		{"an exact kernel release with its suffix misses another ABI", "=6.8.0-45-generic", "6.8.0-60-generic", false},
		{"a kernel prefix with an ABI number matches its flavours", "6.8.0-45", "6.8.0-45-generic", true},
		{"a kernel prefix with an ABI number misses a longer ABI number", "6.8.0-45", "6.8.0-450-generic", false},
		{"a v-prefixed version is compared without its v", ">=1.7", "v1.7.22", true},
		{"a v-prefixed constraint is compared without its v", "v1.7", "1.7.22", true},
		{"a v-prefixed exact constraint matches a v-prefixed version", "=v1.7.22", "v1.7.22", true},
		{"a containerd build suffix is ignored when comparing", ">=1.7.20", "1.7.22-1ubuntu1", true},
		{"a garbage version matches nothing", ">=0", "unknown", false},
		{"an empty version matches nothing", ">=0", "", false},
		{"a version with an empty number matches nothing", ">=0", "1..2", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConstraint(tt.constraint)
			if err != nil {
				t.Fatalf("ParseConstraint(%q): %v", tt.constraint, err)
			}
			if got := c.Match(tt.version); got != tt.want {
				t.Errorf("ParseConstraint(%q).Match(%q) = %v, want %v", tt.constraint, tt.version, got, tt.want)
			}
			if c.text != strings.TrimSpace(tt.constraint) {
				t.Errorf("String() = %q, want the constraint as written %q", c.text, strings.TrimSpace(tt.constraint))
			}
		})
	}
}

func TestParseConstraintRejectsGarbage(t *testing.T) {
	tests := []struct {
		name       string
		constraint string
		wantErr    string
	}{
		{"an empty constraint", "", "empty version constraint"},
		{"a blank constraint", "   ", "empty version constraint"},
		{"an operator without a version", ">=", "no version number"},
		{"a word", "latest", `"latest" is not a dotted version number`},
		{"a trailing comma", ">=550,", "no version number"},
		{"an empty number", "550..1", "not a dotted version number"},
		{"a trailing dot", "550.", "not a dotted version number"},
		{"an unsupported operator", "!=550", "not a dotted version number"},
		{"a tilde range", "~550", "not a dotted version number"},
		{"a double wildcard", "13.x.x", "not a dotted version number"},
		{"a lone wildcard", "x", "not a dotted version number"},
		{"a star", "*", "not a dotted version number"},
		{"two versions without a comma", "550 560", "not a dotted version number"},
		{"a negative number", ">=-1", "not a dotted version number"},
		{"a number too large for an int", "99999999999999999999", "not a dotted version number"},
		{"an ordering operator with a suffix", ">=6.8.0-45-generic", "can only be matched exactly"},
		{"a wildcard after a suffix", "6.8.0-45.x", "can only be matched exactly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConstraint(tt.constraint)
			if err == nil {
				t.Fatalf("ParseConstraint(%q) succeeded, want an error containing %q", tt.constraint, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseConstraint(%q) = %q, want it to contain %q", tt.constraint, err, tt.wantErr)
			}
		})
	}
}

func TestMatchAny(t *testing.T) {
	tests := []struct {
		name         string
		alternatives []string
		version      string
		want         bool
	}{
		{"no alternatives allow every version", nil, "1.0", true},
		{"no alternatives allow even an unreadable version", []string{}, "garbage", true},
		{"the first alternative matches", []string{">=550,<560", ">=570"}, "555.1", true},
		{"the second alternative matches", []string{">=550,<560", ">=570"}, "580.95.05", true},
		{"a version between the alternatives matches neither", []string{">=550,<560", ">=570"}, "565.57.01", false},
		{"an exact pin among ranges matches", []string{"=535.183.01", ">=570"}, "535.183.01", true},
		{"an invalid alternative is skipped, not fatal", []string{"latest", "13.x"}, "13.0", true},
		{"only invalid alternatives match nothing", []string{"latest"}, "13.0", false},
		{"an unreadable version matches no alternative", []string{">=0"}, "N/A", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MatchAny(tt.alternatives, tt.version); got != tt.want {
				t.Errorf("MatchAny(%q, %q) = %v, want %v", tt.alternatives, tt.version, got, tt.want)
			}
		})
	}
}

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		name string
		a, b []int
		want int
	}{
		{"a missing number compares as zero", []int{12}, []int{12, 0}, 0},
		{"a missing number compares as zero either way round", []int{12, 0, 0}, []int{12}, 0},
		{"a longer version with a non-zero tail is newer", []int{12, 0, 1}, []int{12}, 1},
		{"a shorter version is older than a non-zero tail", []int{12}, []int{12, 1}, -1},
		{"the first differing number decides", []int{6, 18}, []int{6, 8, 99}, 1},
		{"two empty versions are equal", nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := compare(tt.a, tt.b); got != tt.want {
				t.Errorf("compare(%v, %v) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestVersionsOfDifferentLengthsMatch(t *testing.T) {
	tests := []struct {
		name       string
		constraint string
		version    string
		want       bool
	}{
		{"an exact 12.0 matches a CUDA version written 12", "=12.0", "12", true},
		{"an exact 12 matches a CUDA version written 12.0", "=12", "12.0", true},
		{"a minimum of 12.0 is met by 12", ">=12.0", "12", true},
		{"a strict minimum of 12 is not met by 12.0", ">12", "12.0", false},
		{"a prefix longer than the version does not match", "12.0", "12", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConstraint(tt.constraint)
			if err != nil {
				t.Fatalf("ParseConstraint(%q): %v", tt.constraint, err)
			}
			if got := c.Match(tt.version); got != tt.want {
				t.Errorf("ParseConstraint(%q).Match(%q) = %v, want %v", tt.constraint, tt.version, got, tt.want)
			}
		})
	}
}

func FuzzParseConstraint(f *testing.F) {
	for _, s := range []string{">=550.54", "<600", ">=550,<600", "=580.95.05", "580.95", "13.x",
		"<=13.x", ">13.x", "6.8", "=6.8.0-45-generic", "v1.7.22", "", ",", ">=", "latest", "1..2"} {
		f.Add(s, "580.95.05")
		f.Add(s, "6.8.0-45-generic")
	}
	f.Fuzz(func(t *testing.T, constraint, version string) {
		c, err := ParseConstraint(constraint)
		if err != nil {
			if MatchAny([]string{constraint}, version) {
				t.Errorf("MatchAny with only the invalid constraint %q matched %q", constraint, version)
			}
			return
		}
		if c.text != strings.TrimSpace(constraint) {
			t.Errorf("String() = %q, want %q", c.text, strings.TrimSpace(constraint))
		}
		if got, want := MatchAny([]string{constraint}, version), c.Match(version); got != want {
			t.Errorf("MatchAny([%q], %q) = %v, Match = %v", constraint, version, got, want)
		}
	})
}
