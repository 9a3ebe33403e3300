package host

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"golang.org/x/tools/txtar"
)

// The testdata trees are txtar archives: host file names such as
// sys/bus/pci/devices/0000:18:00.0 contain ':', which Go module zips do not allow.
const (
	treeH100 = "h100-node"
	treeVM   = "bare-vm"
)

// h100GPUs are the GPUs of the h100-node tree, as NVML names them.
var h100GPUs = func() []GPURef {
	var refs []GPURef
	for i, bus := range []string{"18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"} {
		refs = append(refs, GPURef{
			UUID:  fmt.Sprintf("GPU-00000000-0000-0000-0000-00000000000%d", i),
			BusID: "00000000:" + bus + ":00.0",
		})
	}
	return refs
}()

// vmGPUs is the one GPU of the bare-vm tree.
var vmGPUs = []GPURef{{UUID: "GPU-11111111-2222-3333-4444-555555555555", BusID: "00000000:00:06.0"}}

var testTime = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// loadTree reads testdata/<name>.txtar into a filesystem; a file named *.hex holds hex
// bytes (binary EFI variables) and is stored decoded, without the suffix.
func loadTree(t testing.TB, name string) fstest.MapFS {
	t.Helper()
	ar, err := txtar.ParseFile(filepath.Join("testdata", name+".txtar"))
	if err != nil {
		t.Fatalf("load tree %s: %v", name, err)
	}
	fsys := fstest.MapFS{}
	for _, f := range ar.Files {
		data := f.Data
		fname := f.Name
		if base, ok := strings.CutSuffix(fname, ".hex"); ok {
			if data, err = hex.DecodeString(strings.Join(strings.Fields(string(f.Data)), "")); err != nil {
				t.Fatalf("tree %s: %s: %v", name, f.Name, err)
			}
			fname = base
		}
		fsys[fname] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	return fsys
}

// writeTree materializes a tree in a temporary folder, for the real-filesystem reader.
func writeTree(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	for p, f := range loadTree(t, name) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fakeStatfs answers for the folders of both trees.
func fakeStatfs(p string) (StatFS, error) {
	switch p {
	case "/var/lib/containerd":
		return StatFS{TotalBytes: 1 << 40, FreeBytes: 1 << 39, TotalInodes: 1000, FreeInodes: 50}, nil
	case "/var/lib/kubelet":
		return StatFS{TotalBytes: 1 << 40, FreeBytes: 1 << 38, TotalInodes: 1000, FreeInodes: 900}, nil
	case "/raid/models":
		return StatFS{TotalBytes: 30 << 40, FreeBytes: 3 << 40, TotalInodes: 0, FreeInodes: 0}, nil
	case "/dev/shm":
		return StatFS{TotalBytes: 32 << 30, FreeBytes: 32 << 30}, nil
	}
	return StatFS{}, fmt.Errorf("statfs %s: %w", p, fs.ErrNotExist)
}

const containerdVersionOut = "containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da\n"

func fakeExec(_ context.Context, p string, args ...string) ([]byte, error) {
	if p == "/usr/bin/containerd" && len(args) == 1 && args[0] == "--version" {
		return []byte(containerdVersionOut), nil
	}
	return nil, errors.New("exec " + p + ": unexpected")
}

// newTestReader reads a tree with fake statfs and exec; synced nil leaves the kernel's clock
// state unknown.
func newTestReader(t testing.TB, tree string, synced *bool) *Reader {
	r := &Reader{
		Root:   loadTree(t, tree),
		Statfs: fakeStatfs,
		Exec:   fakeExec,
		Now:    func() time.Time { return testTime },
	}
	if synced != nil {
		s := *synced
		r.ClockSynced = func() (bool, error) { return s, nil }
	}
	return r
}

// readTree reads a tree with its own GPUs and a cache folder on the h100 node.
func readTree(t *testing.T, tree string) *Facts {
	t.Helper()
	synced := true
	r := newTestReader(t, tree, &synced)
	gpus, opts := h100GPUs, Options{CacheDirs: []string{"/raid/models"}}
	if tree == treeVM {
		r.ClockSynced = nil
		gpus, opts = vmGPUs, Options{}
	}
	f, err := r.Read(context.Background(), opts, gpus)
	if err != nil {
		t.Fatalf("read %s: %v", tree, err)
	}
	return f
}
