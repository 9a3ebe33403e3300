package rootfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

// hostTree is a host's root with the links hosts have and the ones an attacker plants.
func hostTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mk := func(p, content string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, p string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	mk("usr/lib/os-release", "ID=host\n")
	mk("etc/hostname", "the-host\n")
	mk("sys/devices/pci0000:00/0000:3b:00.0/numa_node", "1\n")
	ln("../usr/lib/os-release", "etc/os-release")                                      // relative, as distributions ship it
	ln("/usr/lib/os-release", "etc/os-release-abs")                                    // absolute: the host's, not ours
	ln("../../../devices/pci0000:00/0000:3b:00.0", "sys/bus/pci/devices/0000:3b:00.0") // sysfs
	ln("/etc/hostname", "var/planted")                                                 // a planted absolute link
	ln("../../../../../../../../etc/hostname", "var/lib/escape")                       // a planted climb
	ln("loop-b", "var/loop-a")
	ln("loop-a", "var/loop-b")
	ln("/", "proc/1/root")
	return root
}

func TestEveryLinkResolvesInsideTheHostRoot(t *testing.T) {
	root := hostTree(t)
	d := Dir(root)
	cases := []struct{ name, path, want string }{
		{"a relative link reads the host's file", "etc/os-release", "ID=host\n"},
		{"an absolute link reads the host's file, not the reader's", "etc/os-release-abs", "ID=host\n"},
		{"a sysfs device link is followed inside the root", "sys/bus/pci/devices/0000:3b:00.0/numa_node", "1\n"},
		{"a planted absolute link stays in the root", "var/planted", "the-host\n"},
		{"a planted climb stops at the root", "var/lib/escape", "the-host\n"},
		{"a link to / is the root", "proc/1/root/etc/hostname", "the-host\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := fs.ReadFile(d, tc.path)
			if err != nil || string(b) != tc.want {
				t.Errorf("ReadFile(%s) = %q, %v; want %q", tc.path, b, err, tc.want)
			}
		})
	}
	if _, err := fs.ReadFile(d, "var/loop-a"); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("a link loop: %v, want ELOOP", err)
	}
	_, err := fs.ReadFile(d, "etc/missing")
	if !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), root) {
		t.Errorf("a missing file: %v: want not-exist, naming the root-relative path only", err)
	}
	if _, err := d.Open("/etc/hostname"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("an absolute name: %v, want ErrInvalid (fs.FS names are relative)", err)
	}
}

func TestTheHostDirIsAValidFS(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "hostname"), []byte("h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(Dir(root), "etc/hostname"); err != nil {
		t.Error(err)
	}
}
