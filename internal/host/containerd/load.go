package containerd

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/gpunode/gpunode/internal/host/rootfs"
)

// maxFiles bounds the files one config may pull in through imports.
const maxFiles = 64

// Load reads the config file at p (an absolute host path) from fsys, whose root is the
// host's "/", and merges its imports the way containerd does: breadth first, each file
// once, glob patterns expanded in sorted order, relative paths taken from the importing
// file's folder. A file that fails stops the load; the config merged so far is returned
// with the error (containerd itself would refuse to start).
func Load(fsys fs.FS, p string) (*Config, error) {
	p = path.Clean("/" + p)
	var out *Config
	loaded := map[string]bool{}
	pending := []string{p}
	for len(pending) > 0 {
		file := pending[0]
		pending = pending[1:]
		if loaded[file] {
			continue
		}
		if len(loaded) == maxFiles {
			return out, fmt.Errorf("containerd config %s: more than %d imported files", p, maxFiles)
		}
		loaded[file] = true
		data, err := fs.ReadFile(fsys, rootfs.Path(file))
		if err != nil {
			return out, fmt.Errorf("read %s: %w", file, rootfs.Inner(err))
		}
		c, err := Parse(data)
		if err != nil {
			return out, fmt.Errorf("%s: %w", file, err)
		}
		if out == nil {
			out = c
			out.Path = p
		} else {
			out.merge(c)
		}
		out.Files = append(out.Files, file)
		imports, err := resolveImports(fsys, file, c.imports)
		if err != nil {
			return out, err
		}
		pending = append(pending, imports...)
	}
	return out, nil
}

// resolveImports expands the import patterns of file into host paths.
func resolveImports(fsys fs.FS, file string, patterns []string) ([]string, error) {
	var out []string
	for _, pat := range patterns {
		if !path.IsAbs(pat) {
			pat = path.Join(path.Dir(file), pat)
		}
		pat = path.Clean(pat)
		if !strings.ContainsAny(pat, `*?[`) {
			out = append(out, pat)
			continue
		}
		matches, err := fs.Glob(fsys, rootfs.Path(pat))
		if err != nil {
			return nil, fmt.Errorf("%s: import %q: %w", file, pat, err)
		}
		for _, m := range matches {
			out = append(out, "/"+m)
		}
	}
	return out, nil
}
