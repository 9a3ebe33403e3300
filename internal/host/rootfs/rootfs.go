// Package rootfs maps absolute host paths onto a host root given as an fs.FS, and strips
// the fs.FS-relative path from its errors so callers can name the host path themselves.
package rootfs

import (
	"errors"
	"io/fs"
	"path"
)

// Path turns an absolute host path ("/etc/cdi") into a path of the root ("etc/cdi").
func Path(p string) string {
	p = path.Clean("/" + p)
	if p == "/" {
		return "."
	}
	return p[1:]
}

// Inner drops the fs.PathError wrapper, whose path is relative to the root.
func Inner(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
