package evidence

import (
	"bytes"
	"context"
	"os"
	"testing"
)

// FuzzReadManifest: any input either fails with ErrBadManifest-wrapped or read errors, or
// yields a manifest that passes Validate and survives an encode/decode round trip.
func FuzzReadManifest(f *testing.F) {
	b, err := Build(fixture(f), Limits{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b.ManifestJSON)
	f.Add([]byte(`{"schema":"gpunode.dev/evidence/v1","node":"n","created":"2026-11-29T00:00:00Z","files":[{"name":"../x","sha256":""}]}`))
	f.Add([]byte(`{"schema":"gpunode.dev/evidence/v1"} {}`))
	f.Add([]byte(`{"schema":"gpunode.dev/evidence/v2","node":"n"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ReadManifest(bytes.NewReader(data))
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("ReadManifest accepted a manifest Validate refuses: %v", err)
		}
		enc, err := encodeManifest(m)
		if err != nil {
			t.Fatalf("an accepted manifest does not encode: %v", err)
		}
		if _, err := ReadManifest(bytes.NewReader(enc)); err != nil {
			t.Fatalf("an accepted manifest does not read back: %v", err)
		}
	})
}

// FuzzReadBundle: no archive makes ReadBundle panic, and whatever it accepts matches its
// manifest file for file.
func FuzzReadBundle(f *testing.F) {
	sum, err := (&Store{Dir: f.TempDir()}).Write(context.Background(), fixture(f))
	if err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(sum.Path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ReadBundle(bytes.NewReader(data), true)
		if err != nil {
			return
		}
		if len(b.Files) != len(b.Manifest.Files) {
			t.Fatalf("accepted %d files for a manifest of %d", len(b.Files), len(b.Manifest.Files))
		}
		for i, fl := range b.Files {
			if int64(len(fl.Data)) != b.Manifest.Files[i].Bytes {
				t.Fatalf("file %s: %d bytes accepted, manifest %d", fl.Name, len(fl.Data), b.Manifest.Files[i].Bytes)
			}
		}
	})
}
