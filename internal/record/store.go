package record

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/atomicfile"
)

// DefaultKeep is how many records a Store keeps when Keep is not set.
const DefaultKeep = 20

// Store keeps the newest records of a node as <id>.json in Dir, the JSON of JSON (apiVersion
// gpunode.dev/record/v1), which the exporter's acceptance collector reads. The agent puts
// each acceptance run's record there (<state-dir>/records).
type Store struct {
	// Dir is the folder, created on the first Put.
	Dir string
	// Keep is how many records stay (the newest by modification time, then name); older
	// ones are removed. Zero or less means DefaultKeep.
	Keep int
}

// Put writes r atomically (a reader sees no half record) and then removes the oldest
// records beyond Keep. It returns the file's path; a failure to remove an old record is
// returned with the path of the record written.
func (s *Store) Put(r *Record) (string, error) {
	if r.ID == "" || strings.ContainsAny(r.ID, `/\`) || strings.HasPrefix(r.ID, ".") {
		return "", fmt.Errorf("record store %s: record id %q is not a file name", s.Dir, r.ID)
	}
	data, err := JSON(r)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return "", fmt.Errorf("record store %s: %w", s.Dir, err)
	}
	path := filepath.Join(s.Dir, r.ID+".json")
	if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("record store: %w", err)
	}
	return path, s.prune()
}

// prune removes the record files past the newest Keep. Only *.json files are counted and
// removed; the temporary files of a write in flight (".<name>.tmp-*") are not.
func (s *Store) prune() error {
	keep := s.Keep
	if keep <= 0 {
		keep = DefaultKeep
	}
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return fmt.Errorf("record store %s: %w", s.Dir, err)
	}
	type file struct {
		name string
		mod  time.Time
	}
	var files []file
	for _, e := range entries {
		if !e.Type().IsRegular() || filepath.Ext(e.Name()) != ".json" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		files = append(files, file{e.Name(), info.ModTime()})
	}
	if len(files) <= keep {
		return nil
	}
	slices.SortFunc(files, func(a, b file) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return cmp.Compare(b.name, a.name)
	})
	var errs []error
	for _, f := range files[keep:] {
		if err := os.Remove(filepath.Join(s.Dir, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("record store: remove %s: %w", f.name, err))
		}
	}
	return errors.Join(errs...)
}
