package yamlfile

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to Decode, Rest and the path helpers: nothing may panic,
// every error is an *Error naming the file with at least one problem, and every line
// reported is a line of the input (lines as YAML counts them).
func FuzzDecode(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("version: v1\nsharing:\n  replicas: x\n"))
	f.Add([]byte("a: b: c\n"))
	f.Add([]byte("&a [*a, *a]\n"))
	f.Add([]byte("version: v1\n---\nversion: v2\n---\n[\n"))
	f.Add([]byte("names: \"a\\nb\"\n"))
	f.Add([]byte("\xff\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// YAML breaks lines at "\r\n", "\n" and a lone "\r" (as editors of old Mac files do).
		lines := bytes.Count(bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n")), []byte("\n")) + 1
		check := func(err error) {
			t.Helper()
			if err == nil {
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "fuzz.yaml" {
				t.Fatalf("error %v (%T) is not an *Error naming fuzz.yaml", err, err)
			}
			if e.Line < 0 || e.Line > lines {
				t.Fatalf("error %v: line %d is not a line of a %d-line input", err, e.Line, lines)
			}
			if len(Problems(err)) == 0 {
				t.Fatalf("error %v has no problem", err)
			}
		}
		var c config
		doc, err := Decode("fuzz.yaml", data, &c)
		check(err)
		if err == nil {
			for _, path := range [][]any{{"version"}, {"sharing", "replicas"}, {"names", 0}, Dotted("a.b.c")} {
				if l := KeyLine(doc, path...); l < 0 || l > lines {
					t.Fatalf("KeyLine(%v) = %d, not a line of a %d-line input", path, l, lines)
				}
				_ = Find(doc, path...)
			}
			if _, err := Parse("fuzz.yaml", data); err != nil {
				t.Fatalf("Decode read the file but Parse refuses it: %v", err)
			}
		}
		docs, err := Rest("fuzz.yaml", data)
		check(err)
		for _, d := range docs {
			if d == nil || d.Line < 1 || d.Line > lines {
				t.Fatalf("a later document %+v is not at a line of the input", d)
			}
		}
	})
}
