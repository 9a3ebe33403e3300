package rootfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks is how many symbolic links one path may pass through (Linux's limit).
const maxLinks = 40

// Dir is the host's "/" mounted at dir, as an fs.FS in which every symbolic link resolves
// inside dir, as it would on the host (as if chrooted): an absolute target starts again at
// dir, and ".." stops at it. os.DirFS follows links as the reading process sees them, so a
// host's /etc/os-release -> /usr/lib/os-release read the container's file, and a planted
// link could read any file of the agent's own filesystem. Errors are *fs.PathError with the
// name given (relative to the root), never dir.
func Dir(dir string) fs.FS { return hostDir(dir) }

type hostDir string

var (
	_ fs.ReadDirFS  = hostDir("")
	_ fs.ReadFileFS = hostDir("")
	_ fs.StatFS     = hostDir("")
)

// resolve returns the path under the root that name designates once every link on the way,
// the last one included, is resolved inside the root. A component that does not exist ends
// the resolution: the rest is appended as it is (opening it then fails as on the host).
func (d hostDir) resolve(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	var done []string
	todo := strings.Split(name, "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		p := filepath.Join(string(d), filepath.Join(done...), c)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			if err != nil {
				done = append(done, todo...)
				break
			}
			continue
		}
		if links++; links > maxLinks {
			return "", &fs.PathError{Op: op, Path: name, Err: syscall.ELOOP}
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", &fs.PathError{Op: op, Path: name, Err: Inner(err)}
		}
		if path.IsAbs(target) {
			done = nil
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return filepath.Join(append([]string{string(d)}, done...)...), nil
}

// pathErr renames the OS's error to the name given.
func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: op, Path: name, Err: pe.Err}
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// Open opens name, resolved inside the root.
func (d hostDir) Open(name string) (fs.File, error) {
	p, err := d.resolve("open", name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	return f, nil
}

// ReadFile reads name, resolved inside the root.
func (d hostDir) ReadFile(name string) ([]byte, error) {
	p, err := d.resolve("read", name)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	return b, pathErr("read", name, err)
}

// ReadDir lists name, resolved inside the root.
func (d hostDir) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := d.resolve("readdir", name)
	if err != nil {
		return nil, err
	}
	es, err := os.ReadDir(p)
	return es, pathErr("readdir", name, err)
}

// Stat describes name, resolved inside the root (a link is followed, as by os.Stat).
func (d hostDir) Stat(name string) (fs.FileInfo, error) {
	p, err := d.resolve("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	return fi, pathErr("stat", name, err)
}
