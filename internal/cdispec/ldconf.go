package cdispec

import (
	"io/fs"
	"path"
	"slices"
	"strings"
)

// maxLdConfDepth bounds nested includes (a loop of includes ends there).
const maxLdConfDepth = 4

// searchDirs are the folders searched for driver libraries: the standard ones, then every
// folder the host's dynamic linker is configured with (etc/ld.so.conf and its includes),
// where drivers installed outside the distribution's folders put theirs (for example
// /usr/local/nvidia/lib64). Paths are relative to the host root.
func searchDirs(root fs.FS) []string {
	dirs := slices.Clone(libDirs)
	for _, d := range ldConfDirs(root, "etc/ld.so.conf", 0) {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// ldConfDirs reads one ld.so.conf file: a folder per line, "include GLOB" lines, "#"
// comments. A file that cannot be read adds nothing.
func ldConfDirs(root fs.FS, name string, depth int) []string {
	if depth > maxLdConfDepth {
		return nil
	}
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "include "):
			for _, pat := range strings.Fields(strings.TrimPrefix(line, "include ")) {
				pat = strings.TrimPrefix(pat, "/")
				if !path.IsAbs("/"+pat) || strings.Contains(pat, "..") {
					continue
				}
				if !strings.Contains(pat, "/") {
					pat = path.Join(path.Dir(name), pat)
				}
				matches, _ := fs.Glob(root, pat)
				slices.Sort(matches)
				for _, m := range matches {
					out = append(out, ldConfDirs(root, m, depth+1)...)
				}
			}
		case strings.HasPrefix(line, "/") && !strings.Contains(line, ".."):
			out = append(out, strings.TrimPrefix(path.Clean(line), "/"))
		}
	}
	return out
}
