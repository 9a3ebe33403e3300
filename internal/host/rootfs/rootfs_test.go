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
	got := Inner(err)
	var pe *fs.PathError
	if !errors.Is(got, fs.ErrNotExist) || errors.As(got, &pe) {
		t.Errorf("Inner = %v", got)
	}
	plain := errors.New("x")
	if !errors.Is(Inner(plain), plain) {
		t.Error("a plain error changed")
	}
}
