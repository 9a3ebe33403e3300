// Package atomicfile writes files so that a reader, or a crash, sees either the old
// content or the new one, never half of it.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes data to path through a temporary file in the same folder: written,
// given perm, fsynced, renamed over path, and the folder fsynced so the rename survives a
// crash. On error the temporary file is removed and path is untouched. Errors name path.
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	_, werr := tmp.Write(data)
	merr := tmp.Chmod(perm)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, merr, serr, cerr); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("write %s: fsync folder: %w", path, err)
	}
	serr = d.Sync()
	cerr = d.Close()
	if err := errors.Join(serr, cerr); err != nil {
		return fmt.Errorf("write %s: fsync folder: %w", path, err)
	}
	return nil
}
