package labels

import (
	"strings"
	"testing"
)

func TestSanitizeValue(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"spaces in a product name become dashes", "NVIDIA H100 80GB HBM3", "NVIDIA-H100-80GB-HBM3"},
		{"runs of spaces become one dash", "NVIDIA  A100-SXM4-40GB ", "NVIDIA-A100-SXM4-40GB"},
		{"tabs and newlines count as spaces", "NVIDIA\tL4\n", "NVIDIA-L4"},
		{"punctuation outside the label alphabet is dropped", "Standard PC (Q35 + ICH9, 2009)", "Standard-PC-Q35-ICH9-2009"},
		{"non-ASCII letters are dropped", "NVIDIA™ GeForce RTX 4090 Übertakt", "NVIDIA-GeForce-RTX-4090-bertakt"},
		{"dots and underscores are kept inside", "a.b_c", "a.b_c"},
		{"non-alphanumeric ends are trimmed", "-_.GPU._-", "GPU"},
		{"a value longer than 63 characters is cut", strings.Repeat("ab", 40), strings.Repeat("ab", 31) + "a"},
		{"a cut that ends on a dash is trimmed", strings.Repeat("x", 62) + " y", strings.Repeat("x", 62)},
		{"nothing valid gives the empty string", " (+) ™ ", ""},
		{"the empty string stays empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SanitizeValue(tt.in)
			if got != tt.want {
				t.Errorf("SanitizeValue(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if !ValidValue(got) {
				t.Errorf("SanitizeValue(%q) = %q is not a valid label value", tt.in, got)
			}
		})
	}
}

func TestValidValue(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		valid bool
	}{
		{"the empty value is valid", "", true},
		{"a GFD product is valid", "NVIDIA-H100-80GB-HBM3-SHARED", true},
		{"a single character is valid", "a", true},
		{"63 characters are valid", strings.Repeat("a", 63), true},
		{"64 characters are not", strings.Repeat("a", 64), false},
		{"a leading dash is not", "-a", false},
		{"a trailing dot is not", "a.", false},
		{"a space is not", "a b", false},
		{"a slash is not", "a/b", false},
		{"a non-ASCII letter is not", "é", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidValue(tt.in); got != tt.valid {
				t.Errorf("ValidValue(%q) = %v, want %v", tt.in, got, tt.valid)
			}
		})
	}
}

// FuzzSanitizeValue checks that any input gives a valid label value (or ""), that
// sanitising is idempotent, and that a value already valid comes back unchanged.
func FuzzSanitizeValue(f *testing.F) {
	for _, s := range []string{
		"NVIDIA H100 80GB HBM3", "Standard PC (Q35 + ICH9, 2009)", "", " ", "-", "a.b",
		strings.Repeat("x y", 30), "\x00\xff", "NVIDIA™", "é-ü", "a\u00a0b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := SanitizeValue(in)
		if !ValidValue(out) {
			t.Fatalf("SanitizeValue(%q) = %q is not a valid label value", in, out)
		}
		if again := SanitizeValue(out); again != out {
			t.Fatalf("SanitizeValue is not idempotent: %q -> %q -> %q", in, out, again)
		}
		if ValidValue(in) && out != in {
			t.Fatalf("SanitizeValue changed the valid value %q into %q", in, out)
		}
		if p := productValue(in, true); p != "" && (!ValidValue(p) || !strings.HasSuffix(p, sharedSuffix)) {
			t.Fatalf("productValue(%q, shared) = %q: want a valid value ending in -SHARED", in, p)
		}
		if c := DerivedClass(in, uint64(len(in))*4096); !ValidValue(c) || c == "" {
			t.Fatalf("DerivedClass(%q) = %q is not a valid non-empty label value", in, c)
		}
	})
}
