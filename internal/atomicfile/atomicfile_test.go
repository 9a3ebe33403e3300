package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFileReplacesTheFileAndLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.json")
	for _, content := range []string{"first\n", "second\n"} {
		if err := WriteFile(p, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("folder holds %d entries, want only x.json", len(ents))
	}
}

func TestWriteFileNamesThePathItCannotWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing", "x.json")
	if err := WriteFile(p, []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("WriteFile = %v, want an error naming %s", err, p)
	}
}
