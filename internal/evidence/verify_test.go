package evidence

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewrite writes data as a bundle file named by its own hash (so only the content checks
// can catch it) and returns the path.
func rewrite(t *testing.T, dir, node string, b Bundle, data []byte) string {
	t.Helper()
	sum := sha256.Sum256(data)
	p := filepath.Join(dir, BundleName(node, b.Manifest.Created, hex.EncodeToString(sum[:])))
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// tarGz packs files (the first is the manifest) without Encode's checks.
func tarGz(t *testing.T, files []File) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.Name, Mode: 0o644, Size: int64(len(f.Data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(tw.Close(), gz.Close()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestVerifyFindsEveryKindOfDamage(t *testing.T) {
	dir := t.TempDir()
	sum, err := (&Store{Dir: dir}).Write(context.Background(), fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	good := open(t, sum.Path)
	orig, err := os.ReadFile(sum.Path)
	if err != nil {
		t.Fatal(err)
	}
	all := append([]File{{Name: ManifestName, Data: good.ManifestJSON}}, good.Files...)
	tests := []struct {
		name string
		path func(t *testing.T, dir string) string
		want string
	}{
		{"a flipped byte no longer matches the hash in the name", func(t *testing.T, dir string) string {
			bad := bytes.Clone(orig)
			bad[len(bad)/2] ^= 0xff
			p := filepath.Join(dir, sum.Name)
			if err := os.WriteFile(p, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, "the name says " + sum.SHA256},
		{"a file changed after the manifest was written is caught by its sha256", func(t *testing.T, dir string) string {
			files := append([]File(nil), all...)
			files[3] = File{Name: files[3].Name, Data: bytes.Replace(files[3].Data, []byte("xid-79"), []byte("xid-31"), 1)}
			return rewrite(t, dir, "gpu-node-07", good, tarGz(t, files))
		}, "file findings.json: sha256"},
		{"a missing file is caught", func(t *testing.T, dir string) string {
			return rewrite(t, dir, "gpu-node-07", good, tarGz(t, all[:len(all)-1]))
		}, "6 files, the manifest lists 7"},
		{"data hidden after the archive's end is caught", func(t *testing.T, dir string) string {
			var extra bytes.Buffer
			gz := gzip.NewWriter(&extra)
			_, _ = gz.Write([]byte("smuggled"))
			if err := gz.Close(); err != nil {
				t.Fatal(err)
			}
			return rewrite(t, dir, "gpu-node-07", good, append(bytes.Clone(orig), extra.Bytes()...))
		}, "data after the archive's end"},
		{"an extra file is caught", func(t *testing.T, dir string) string {
			return rewrite(t, dir, "gpu-node-07", good, tarGz(t, append(append([]File(nil), all...), File{Name: "x.sh", Data: []byte("rm -rf /")})))
		}, `file "x.sh" is not in the manifest`},
		{"an archive without the manifest first is refused", func(t *testing.T, dir string) string {
			return rewrite(t, dir, "gpu-node-07", good, tarGz(t, all[1:]))
		}, "first entry is \"node.json\""},
		{"a bundle renamed to another node is caught", func(t *testing.T, dir string) string {
			return rewrite(t, dir, "gpu-node-08", good, orig)
		}, "the manifest is of node gpu-node-07"},
		{"a file that is not a bundle name is refused with its name", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "notes.tar.gz")
			if err := os.WriteFile(p, orig, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, `bundle name "notes.tar.gz"`},
		{"a missing bundle is named", func(t *testing.T, dir string) string {
			return filepath.Join(dir, BundleName("n", good.Manifest.Created, strings.Repeat("a", 64)))
		}, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.path(t, t.TempDir())
			_, err := Verify(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("Verify(%s) = %v, want an error naming the path and containing %q", p, err, tc.want)
			}
		})
	}
}
