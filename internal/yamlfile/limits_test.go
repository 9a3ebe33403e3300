package yamlfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keys is a mapping of n keys under "labels", as a policy's metadata would hold them.
func keys(n int) string {
	var b strings.Builder
	b.WriteString("name: p\nlabels:\n")
	for i := range n {
		fmt.Fprintf(&b, "  k%d: v\n", i)
	}
	return b.String()
}

// manyMappings is n mappings of MaxKeys keys each, in a list.
func manyMappings(n int) string {
	var b strings.Builder
	b.WriteString("name: p\nitems:\n")
	for m := range n {
		fmt.Fprintf(&b, "- k%d_0: v\n", m)
		for i := 1; i < MaxKeys; i++ {
			fmt.Fprintf(&b, "  k%d_%d: v\n", m, i)
		}
	}
	return b.String()
}

type labelled struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

func TestTheLimitsOfAFile(t *testing.T) {
	cases := []struct {
		name     string
		data     string
		wantLine int
		tooLarge bool
	}{
		{"a mapping of 512 keys is read", keys(MaxKeys), 0, false},
		{"a mapping of 513 keys is refused at its first key", keys(MaxKeys + 1), 3, true},
		{"a mapping of 40,000 keys is refused before it is decoded", keys(40_000), 3, true},
		{"more than 16,384 keys in small mappings are refused", manyMappings(MaxTotalKeys/MaxKeys + 1), 0, true},
		{"a file of more than 1 MiB is refused", "name: " + strings.Repeat("x", MaxSize) + "\n", 0, true},
		{"a second document with too many keys is refused too", "name: p\n---\n" + keys(MaxKeys+1), 5, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out labelled
			_, err := Decode("f.yaml", []byte(tc.data), &out)
			if err == nil {
				_, err = Rest("f.yaml", []byte(tc.data))
			}
			if errors.Is(err, ErrTooLarge) != tc.tooLarge {
				t.Fatalf("error %v, want too large: %v", err, tc.tooLarge)
			}
			if !tc.tooLarge {
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "f.yaml" || (tc.wantLine > 0 && e.Line != tc.wantLine) {
				t.Errorf("error %v: want an *Error naming f.yaml at line %d", err, tc.wantLine)
			}
		})
	}
}

func TestReadFileStopsAtTheCap(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.yaml")
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(small, []byte("a: b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, make([]byte, MaxSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(small); err != nil || string(data) != "a: b\n" {
		t.Errorf("ReadFile(small) = %q, %v", data, err)
	}
	if _, err := ReadFile(big); !errors.Is(err, ErrTooLarge) || strings.Contains(err.Error(), dir) {
		t.Errorf("ReadFile(big) error %v: want ErrTooLarge, without the path (the loader names it)", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) || err.Error() != "cannot read: no such file or directory" {
		t.Errorf("ReadFile(missing) error %v", err)
	}
	// A device that never ends is read up to the cap and refused.
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := ReadFile("/dev/zero"); !errors.Is(err, ErrTooLarge) {
			t.Errorf("ReadFile(/dev/zero) error %v: want ErrTooLarge", err)
		}
	}
}

// BenchmarkDecodeAtTheLimits decodes a mapping of MaxKeys keys, the worst case the caps
// admit per mapping (docs/benchmarks.md).
func BenchmarkDecodeAtTheLimits(b *testing.B) {
	data := []byte(keys(MaxKeys))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var out labelled
		if _, err := Decode("f.yaml", data, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRefuseAHugeMapping is the refusal of a mapping of 40,000 keys (decoded, it took
// seconds): the node tree is built and checked, nothing decoded.
func BenchmarkRefuseAHugeMapping(b *testing.B) {
	data := []byte(keys(40_000))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var out labelled
		if _, err := Decode("f.yaml", data, &out); !errors.Is(err, ErrTooLarge) {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeTheWorstFileTheCapsAdmit decodes 31 mappings of MaxKeys keys (15,872 keys,
// near the total cap): about the slowest decode a file can ask for.
func BenchmarkDecodeTheWorstFileTheCapsAdmit(b *testing.B) {
	data := []byte(manyMappings(MaxTotalKeys/MaxKeys - 1))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var out struct {
			Name  string              `yaml:"name"`
			Items []map[string]string `yaml:"items"`
		}
		if _, err := Decode("f.yaml", data, &out); err != nil {
			b.Fatal(err)
		}
	}
}
