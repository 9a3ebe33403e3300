package host

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// A fact whose file does not parse is recorded with the path and the problem, never the
// file's contents: the record is readable in the cluster.
func TestAFactsErrorNamesTheFileAndNotItsContents(t *testing.T) {
	root := fstest.MapFS{
		"proc/sys/kernel/tainted": &fstest.MapFile{Data: []byte("password=hunter2\n")},
	}
	r := &Reader{Root: fs.FS(root)}
	f, err := r.Read(t.Context(), Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := f.Err(FactKernelTainted)
	if e == nil {
		t.Fatal("an unparsable tainted file recorded no error")
	}
	if strings.Contains(e.Message, "hunter2") || !strings.Contains(e.Message, "/proc/sys/kernel/tainted") {
		t.Errorf("error %q: want the path, without the file's contents", e.Message)
	}
}
