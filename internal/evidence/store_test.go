package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
)

func TestWriteRoundTripsEveryFile(t *testing.T) {
	c := fixture(t)
	s := &Store{Dir: t.TempDir()}
	sum, err := s.Write(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sum.Name, "evidence-gpu-node-07-20261129T180003Z-"+sum.SHA256) {
		t.Errorf("name %s does not carry the node, the created time and the hash", sum.Name)
	}
	if sum.Counts != (Counts{KernelRecords: 20, Snapshots: 1, Findings: 3, Pods: 2, Errors: 1}) {
		t.Errorf("counts %+v", sum.Counts)
	}
	b := open(t, sum.Path)
	var node NodeFacts
	unmarshal(t, b, FileNode, &node)
	if node != c.Node {
		t.Errorf("node facts %+v, want %+v", node, c.Node)
	}
	var snaps []gpu.Snapshot
	unmarshal(t, b, FileGPU, &snaps)
	if len(snaps) != 1 || !reflect.DeepEqual(snaps[0].Devices, c.Snapshots[0].Devices) {
		t.Error("the GPU snapshot did not round-trip")
	}
	var kernel []KernelRecord
	unmarshal(t, b, FileKernel, &kernel)
	for i := range kernel {
		kernel[i].Time = kernel[i].Time.UTC()
	}
	if !reflect.DeepEqual(kernel, c.Kernel) {
		t.Error("the kernel records did not round-trip")
	}
	var hs HealthState
	unmarshal(t, b, FileHealth, &hs)
	if hs.Stats != c.Health.Stats || hs.GPUs[0].Health != health.Unhealthy {
		t.Errorf("health %+v did not round-trip", hs)
	}
	var errs map[string]string
	unmarshal(t, b, FileErrors, &errs)
	if !reflect.DeepEqual(errs, c.Errors) {
		t.Errorf("errors %v, want %v", errs, c.Errors)
	}
	if b.Manifest.Trigger.Cause != "xid-79" || b.Manifest.Trigger.GPU != c.Trigger.GPU {
		t.Errorf("manifest trigger %+v", b.Manifest.Trigger)
	}
	got, err := Verify(sum.Path)
	if err != nil {
		t.Fatal(err)
	}
	sum.Removed = nil
	if !reflect.DeepEqual(got, sum) {
		t.Errorf("Verify's summary\n%+v\ndiffers from Write's\n%+v", got, sum)
	}
}

func TestSameContentsGiveTheSameHash(t *testing.T) {
	c := fixture(t)
	a, err := (&Store{Dir: t.TempDir()}).Write(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // a later file mtime must not change the archive
	b, err := (&Store{Dir: t.TempDir()}).Write(context.Background(), fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	if a.SHA256 != b.SHA256 || a.ManifestSHA256 != b.ManifestSHA256 || a.Name != b.Name {
		t.Fatalf("same contents, different bundles: %s vs %s", a.Name, b.Name)
	}
	da, _ := os.ReadFile(a.Path)
	db, _ := os.ReadFile(b.Path)
	if !bytes.Equal(da, db) {
		t.Fatal("same contents, different bytes")
	}
	c.Kernel[0].Text += "!"
	d, err := (&Store{Dir: t.TempDir()}).Write(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if d.SHA256 == a.SHA256 || d.ManifestSHA256 == a.ManifestSHA256 {
		t.Error("one changed kernel line did not change the archive and manifest hashes")
	}
}

// failingWriter fails once n bytes have passed.
type failingWriter struct {
	w io.Writer
	n int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n, _ := f.w.Write(p[:f.n])
		f.n = 0
		return n, errors.New("disk full")
	}
	f.n -= len(p)
	return f.w.Write(p)
}

func TestACrashMidWriteLeavesNoBundle(t *testing.T) {
	dir := t.TempDir()
	s := &Store{Dir: dir}
	old, err := s.Write(context.Background(), fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	c := fixture(t)
	c.Created = c.Created.Add(time.Minute)
	s.wrap = func(w io.Writer) io.Writer { return &failingWriter{w: w, n: 100} }
	if _, err := s.Write(context.Background(), c); err == nil || !strings.Contains(err.Error(), "disk full") ||
		!strings.Contains(err.Error(), dir) {
		t.Fatalf("error %v: want the write failure, naming the folder", err)
	}
	names := dirNames(t, dir)
	if len(names) != 1 || names[0] != old.Name {
		t.Fatalf("folder holds %v after a failed write, want only %s", names, old.Name)
	}
	if _, err := Verify(old.Path); err != nil {
		t.Errorf("the earlier bundle was damaged: %v", err)
	}
}

func TestAnUnfinishedArchiveIsNeverABundleAndIsCleanedWhenStale(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, tempPrefix+"123")
	if err := os.WriteFile(tmp, []byte("\x1f\x8b half an archive"), 0o600); err != nil {
		t.Fatal(err)
	}
	now := fixedClock()
	s := &Store{Dir: dir, Clock: func() time.Time { return now }}
	if es, err := s.List(); err != nil || len(es) != 0 {
		t.Fatalf("List() = %v, %v: an unfinished archive was listed", es, err)
	}
	if err := os.Chtimes(tmp, now.Add(-10*time.Minute), now.Add(-10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(context.Background(), fixture(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("a 10-minute-old temporary (maybe a running writer's) was removed: %v", err)
	}
	if err := os.Chtimes(tmp, now.Add(-2*time.Hour), now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(context.Background(), fixture(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a 2-hour-old unfinished archive was kept: %v", err)
	}
}

func TestWriteAppliesRetentionOldestFirst(t *testing.T) {
	dir := t.TempDir()
	base := fixedClock()
	s := &Store{Dir: dir, Retention: Retention{MaxCount: 3, MaxAge: -1, MaxBytes: -1}, Clock: func() time.Time { return base.Add(time.Hour) }}
	var written []Summary
	for i := range 5 {
		c := fixture(t)
		c.Created = base.Add(time.Duration(i) * time.Minute)
		sum, err := s.Write(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, sum)
	}
	if got := written[3].Removed; len(got) != 1 || got[0] != written[0].Name {
		t.Errorf("the 4th write removed %v, want the oldest %s", got, written[0].Name)
	}
	es, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, e := range es {
		kept = append(kept, e.Name)
	}
	want := []string{written[2].Name, written[3].Name, written[4].Name}
	if !reflect.DeepEqual(kept, want) {
		t.Errorf("kept %v, want the 3 newest %v", kept, want)
	}
}

func TestWriteRefusesBadInput(t *testing.T) {
	tests := []struct {
		name  string
		store func(t *testing.T) *Store
		edit  func(*Contents)
		want  string
	}{
		{"a node name with a slash is refused before any file is made", func(t *testing.T) *Store { return &Store{Dir: t.TempDir()} },
			func(c *Contents) { c.Node.Node = "../etc" }, `node name "../etc"`},
		{"a folder that cannot be made is named", func(t *testing.T) *Store {
			f := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return &Store{Dir: filepath.Join(f, "evidence")}
		}, func(*Contents) {}, "/file/evidence"},
		{"a cancelled context writes nothing", func(t *testing.T) *Store { return &Store{Dir: t.TempDir()} },
			func(c *Contents) {}, "context canceled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if strings.Contains(tc.name, "cancelled") {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				cancel()
			}
			s := tc.store(t)
			c := fixture(t)
			tc.edit(&c)
			_, err := s.Write(ctx, c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if es, _ := s.List(); len(es) != 0 {
				t.Errorf("a refused write left bundles %v", es)
			}
		})
	}
}

func unmarshal(t *testing.T, b Bundle, name string, v any) {
	t.Helper()
	for _, f := range b.Files {
		if f.Name == name {
			if err := json.Unmarshal(f.Data, v); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return
		}
	}
	t.Fatalf("no %s in the bundle", name)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}
