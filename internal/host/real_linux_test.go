//go:build linux

package host

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestNewReaderReadsARealFolder runs the production reader (os.DirFS, statfs, exec,
// adjtimex) on a tree written to disk, with a containerd that is a shell script.
func TestNewReaderReadsARealFolder(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh to run the fake containerd: ", err)
	}
	dir := writeTree(t, treeH100)
	script := "#!/bin/sh\necho 'containerd github.com/containerd/containerd/v2 v2.0.4 1a43cb6a1035441f9aca8f5666a9b3ef9e70ab20'\n"
	bin := filepath.Join(dir, "usr/bin/containerd")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := NewReader(dir).Read(context.Background(), Options{CacheDirs: []string{"/raid/models"}}, h100GPUs)
	if err != nil {
		t.Fatal(err)
	}
	if f.OS.ID != "ubuntu" || len(f.GPUs) != 8 || f.GPUs[7].NUMANode != 1 {
		t.Errorf("os %q, %d GPUs; want ubuntu and 8 GPUs read through the real filesystem", f.OS.ID, len(f.GPUs))
	}
	if f.SecureBoot.State != SecureBootEnabled {
		t.Errorf("secure boot = %q, want enabled from the binary EFI variable", f.SecureBoot.State)
	}
	if f.Containerd.Version != "2.0.4" || f.Err(FactContainerdVersion) != nil {
		t.Errorf("containerd version = %q (%v), want 2.0.4 from the script", f.Containerd.Version, f.Err(FactContainerdVersion))
	}
	for _, d := range f.Disks {
		if d.Error != nil || d.TotalBytes == 0 {
			t.Errorf("disk %s: %+v, want a real statfs of the temporary folder", d.Path, d)
		}
	}
	if f.TimeSync.Evidence != "adjtimex" && f.Err(FactTimeSync) == nil {
		t.Errorf("time sync = %+v with no error: adjtimex neither answered nor failed", f.TimeSync)
	}
}

// With a real host root, /dev/shm without a size= option in the node's mount table is sized
// by statfs of <root>/dev/shm: the node's filesystem there, not the reader's /dev/shm.
func TestTheRealReaderSizesTheNodesSHMByStatfsUnderTheRoot(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"proc/1/mountinfo": nodeMountinfo, "proc/mounts": containerMounts,
		"proc/meminfo": meminfo48G, "dev/shm/.keep": ""}
	for p, s := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := realStatfs(dir)("/dev/shm")
	if err != nil || want.TotalBytes == 0 {
		t.Fatalf("statfs of the temporary folder: %+v, %v", want, err)
	}
	f, err := NewReader(dir).Read(context.Background(), Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.SHM.Source != SHMFromStatfs || f.SHM.SizeBytes != want.TotalBytes {
		t.Errorf("shm = %+v, want %d bytes by statfs of %s/dev/shm (the container's mount table says 64 MiB)", f.SHM, want.TotalBytes, dir)
	}
}
