package evidence

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"
)

// Encode writes b as a tar+gzip stream to w and returns the stream's sha256 (hex). The
// stream is deterministic: the manifest first, then the files in the manifest's order;
// every header has mode 0644, owner 0:0 with no names, and the bundle's created time
// (whole seconds) as its mtime; the gzip header carries no name and no time. The same
// Bundle gives the same bytes with the same Go release (compress/flate's output is stable
// within one; Verify re-hashes the file, it never rebuilds it).
func Encode(w io.Writer, b Bundle) (string, error) {
	h := sha256.New()
	gz, err := gzip.NewWriterLevel(io.MultiWriter(w, h), gzip.BestCompression)
	if err != nil {
		return "", fmt.Errorf("encode bundle of %s: %w", b.Manifest.Node, err)
	}
	tw := tar.NewWriter(gz)
	mtime := b.Manifest.Created.UTC().Truncate(time.Second)
	files := append([]File{{Name: ManifestName, Data: b.ManifestJSON}}, b.Files...)
	for _, f := range files {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg, Name: f.Name, Size: int64(len(f.Data)), Mode: 0o644,
			ModTime: mtime, Format: tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return "", fmt.Errorf("encode bundle of %s: file %s: %w", b.Manifest.Node, f.Name, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return "", fmt.Errorf("encode bundle of %s: file %s: %w", b.Manifest.Node, f.Name, err)
		}
	}
	if err := errors.Join(tw.Close(), gz.Close()); err != nil {
		return "", fmt.Errorf("encode bundle of %s: %w", b.Manifest.Node, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReadBundle reads a tar+gzip stream written by Encode and checks it against its manifest:
// the manifest comes first, every file it lists follows exactly once with the listed size
// and sha256, and nothing else is in the archive. Reads are bounded by the manifest's
// sizes, so a hostile archive cannot make it read more than it declares. The files' data
// is returned only when keepData is true.
func ReadBundle(r io.Reader, keepData bool) (Bundle, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return Bundle{}, fmt.Errorf("read bundle: gzip: %w", err)
	}
	defer func() { _ = gz.Close() }()
	tr := tar.NewReader(gz)
	hdr, err := tr.Next()
	if err != nil {
		return Bundle{}, fmt.Errorf("read bundle: first entry: %w", err)
	}
	if hdr.Name != ManifestName {
		return Bundle{}, fmt.Errorf("read bundle: first entry is %q, want %s", hdr.Name, ManifestName)
	}
	mj, err := io.ReadAll(io.LimitReader(tr, maxManifestBytes+1))
	if err != nil {
		return Bundle{}, fmt.Errorf("read bundle: %s: %w", ManifestName, err)
	}
	m, err := ReadManifest(bytes.NewReader(mj))
	if err != nil {
		return Bundle{}, fmt.Errorf("read bundle: %w", err)
	}
	out := Bundle{Manifest: m, ManifestJSON: mj}
	for i := 0; ; i++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if i != len(m.Files) {
				return Bundle{}, fmt.Errorf("read bundle of %s: %d files, the manifest lists %d", m.Node, i, len(m.Files))
			}
			if n, _ := io.Copy(io.Discard, io.LimitReader(gz, 1)); n > 0 {
				return Bundle{}, fmt.Errorf("read bundle of %s: data after the archive's end", m.Node)
			}
			return out, nil
		}
		if err != nil {
			return Bundle{}, fmt.Errorf("read bundle of %s: entry %d: %w", m.Node, i+1, err)
		}
		if i >= len(m.Files) {
			return Bundle{}, fmt.Errorf("read bundle of %s: file %q is not in the manifest", m.Node, hdr.Name)
		}
		want := m.Files[i]
		if hdr.Name != want.Name || hdr.Typeflag != tar.TypeReg {
			return Bundle{}, fmt.Errorf("read bundle of %s: entry %d is %q, the manifest lists %q", m.Node, i+1, hdr.Name, want.Name)
		}
		data, err := checkFile(tr, want, keepData)
		if err != nil {
			return Bundle{}, fmt.Errorf("read bundle of %s: %w", m.Node, err)
		}
		out.Files = append(out.Files, File{Name: want.Name, Data: data})
	}
}

// checkFile reads one file (at most its listed size plus one byte) and compares it to the
// manifest's entry.
func checkFile(r io.Reader, want FileEntry, keep bool) ([]byte, error) {
	h := sha256.New()
	var buf *bytes.Buffer
	dst := io.Writer(h)
	if keep {
		buf = &bytes.Buffer{}
		dst = io.MultiWriter(h, buf)
	}
	n, err := io.Copy(dst, io.LimitReader(r, want.Bytes+1))
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", want.Name, err)
	}
	if n != want.Bytes {
		return nil, fmt.Errorf("file %s: %d bytes, the manifest says %d", want.Name, n, want.Bytes)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want.SHA256 {
		return nil, fmt.Errorf("file %s: sha256 %s, the manifest says %s", want.Name, got, want.SHA256)
	}
	if buf == nil {
		return nil, nil
	}
	return buf.Bytes(), nil
}
