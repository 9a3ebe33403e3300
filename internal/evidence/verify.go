package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// ErrCorrupt is wrapped by Verify when a bundle's bytes do not match its name or manifest.
var ErrCorrupt = errors.New("evidence bundle corrupt")

// Verify re-hashes the bundle at path and checks it: the archive's sha256 against the one
// in its file name, the manifest against the schema, every file's size and sha256 against
// the manifest, and the manifest's node and created time against the name. It returns the
// bundle's Summary. Errors name the path; mismatches wrap ErrCorrupt.
func Verify(path string) (Summary, error) {
	node, created, wantSHA, err := ParseName(filepath.Base(path))
	if err != nil {
		return Summary{}, fmt.Errorf("verify %s: %w", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return Summary{}, fmt.Errorf("verify %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return Summary{}, fmt.Errorf("verify %s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != wantSHA {
		return Summary{}, fmt.Errorf("verify %s: %w: sha256 %s, the name says %s", path, ErrCorrupt, got, wantSHA)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Summary{}, fmt.Errorf("verify %s: %w", path, err)
	}
	b, err := ReadBundle(f, false)
	if err != nil {
		return Summary{}, fmt.Errorf("verify %s: %w: %w", path, ErrCorrupt, err)
	}
	m := b.Manifest
	if m.Node != node || !m.Created.Truncate(time.Second).Equal(created) {
		return Summary{}, fmt.Errorf("verify %s: %w: the manifest is of node %s at %s, the name says %s at %s",
			path, ErrCorrupt, m.Node, m.Created.Format(timeLayout), node, created.Format(timeLayout))
	}
	return summarize(b, path, wantSHA, size), nil
}
