package rootfs

import (
	"errors"
	"io/fs"
	"testing"
)

func TestPath(t *testing.T) {
	for in, want := range map[string]string{"/": ".", "/etc/cdi": "etc/cdi", "etc//cdi/": "etc/cdi", "/../x": "x"} {
		if got := Path(in); got != want {
			t.Errorf("Path(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestInnerDropsTheRelativePath(t *testing.T) {
	err := &fs.PathError{Op: "open", Path: "etc/x", Err: fs.ErrNotExist}
	if got := Inner(err); got != fs.ErrNotExist {
		t.Errorf("Inner = %v", got)
	}
	plain := errors.New("x")
	if Inner(plain) != plain {
		t.Error("a plain error changed")
	}
}
