package evidence

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultDir is the host folder bundles are written to by default.
const DefaultDir = "/var/lib/gpunode/evidence"

// staleTemp is how old an unfinished archive (left by a crash mid-write) must be before a
// later Write removes it; younger ones may belong to a writer still running.
const staleTemp = time.Hour

// Store writes bundles into one folder and keeps it within its retention. Its methods are
// safe for concurrent use; writes are serialised.
type Store struct {
	// Dir is the folder (created 0700 when missing); empty means DefaultDir.
	Dir       string
	Limits    Limits
	Retention Retention
	// Clock is used for retention ages; nil means time.Now.
	Clock func() time.Time

	// wrap, for tests, wraps the temporary file's writer (to fail mid-write).
	wrap func(io.Writer) io.Writer
	mu   sync.Mutex
}

func (s *Store) dir() string {
	if s.Dir == "" {
		return DefaultDir
	}
	return s.Dir
}

func (s *Store) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock()
}

// Write builds a bundle from c, writes it atomically and applies retention. A reader (or a
// crash) sees the whole bundle or none: the archive is written to a hidden temporary file,
// fsynced, renamed to its final name and the folder fsynced. The error is non-nil only
// when no bundle was written; a retention failure is reported in the Summary (the bundle
// is there and worth more than the cleanup).
func (s *Store) Write(ctx context.Context, c Contents) (Summary, error) {
	if err := checkNodeName(c.Node.Node); err != nil {
		return Summary{}, fmt.Errorf("write evidence: %w", err)
	}
	b, err := Build(c, s.Limits)
	if err != nil {
		return Summary{}, fmt.Errorf("write evidence: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return Summary{}, fmt.Errorf("write evidence for node %s: %w", c.Node.Node, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := s.dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Summary{}, fmt.Errorf("write evidence for node %s: folder %s: %w", c.Node.Node, dir, err)
	}
	s.removeStaleTemps(dir)
	path, sha, size, err := s.writeAtomic(dir, b)
	if err != nil {
		return Summary{}, fmt.Errorf("write evidence for node %s into %s: %w", c.Node.Node, dir, err)
	}
	sum := summarize(b, path, sha, size)
	sum.Removed, err = s.prune(filepath.Base(path))
	if err != nil {
		sum.RetentionError = err.Error()
	}
	return sum, nil
}

// writeAtomic streams the archive into a temporary file while hashing it, then renames it
// to the name its hash gives.
func (s *Store) writeAtomic(dir string, b Bundle) (path, sha string, size int64, err error) {
	tmp, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return "", "", 0, err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 64<<10)
	var w io.Writer = bw
	if s.wrap != nil {
		w = s.wrap(w)
	}
	if sha, err = Encode(w, b); err != nil {
		return "", "", 0, err
	}
	if err = bw.Flush(); err != nil {
		return "", "", 0, fmt.Errorf("%s: %w", tmp.Name(), err)
	}
	if err = errors.Join(tmp.Chmod(0o600), tmp.Sync()); err != nil {
		return "", "", 0, fmt.Errorf("%s: %w", tmp.Name(), err)
	}
	st, err := tmp.Stat()
	if err != nil {
		return "", "", 0, fmt.Errorf("%s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return "", "", 0, fmt.Errorf("%s: %w", tmp.Name(), err)
	}
	path = filepath.Join(dir, BundleName(b.Manifest.Node, b.Manifest.Created, sha))
	if err = os.Rename(tmp.Name(), path); err != nil {
		return "", "", 0, err
	}
	if err = syncDir(dir); err != nil {
		return "", "", 0, err
	}
	return path, sha, st.Size(), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync folder %s: %w", dir, err)
	}
	if err := errors.Join(d.Sync(), d.Close()); err != nil {
		return fmt.Errorf("fsync folder %s: %w", dir, err)
	}
	return nil
}

// List returns the bundles in the folder, oldest first. Files that are not bundles
// (other names, unfinished temporaries, folders) are not listed.
func (s *Store) List() ([]Entry, error) {
	dir := s.dir()
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list evidence in %s: %w", dir, err)
	}
	var out []Entry
	for _, de := range des {
		if !de.Type().IsRegular() {
			continue
		}
		node, created, sha, err := ParseName(de.Name())
		if err != nil {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue // removed since ReadDir
		}
		out = append(out, Entry{Name: de.Name(), Node: node, Created: created, SHA256: sha, Bytes: info.Size()})
	}
	// ReadDir sorts by name; order by created time as Prune does.
	return sortEntries(out), nil
}

// prune removes what Prune decides, except keep, and returns the removed names.
func (s *Store) prune(keep string) ([]string, error) {
	entries, err := s.List()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range Prune(entries, s.Retention, keep, s.now()) {
		if err := os.Remove(filepath.Join(s.dir(), e.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("retention: remove %s: %w", e.Name, err))
			continue
		}
		removed = append(removed, e.Name)
	}
	return removed, errors.Join(errs...)
}

// removeStaleTemps removes unfinished archives older than staleTemp (a crash mid-write
// leaves one; it is never listed as a bundle).
func (s *Store) removeStaleTemps(dir string) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, de := range des {
		if !strings.HasPrefix(de.Name(), tempPrefix) || !de.Type().IsRegular() {
			continue
		}
		if info, err := de.Info(); err == nil && s.now().Sub(info.ModTime()) > staleTemp {
			_ = os.Remove(filepath.Join(dir, de.Name()))
		}
	}
}
