package record

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dirNames lists a folder's entries.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read folder %s: %v", dir, err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteStoresTheJSONAndTheMarkdownAndNothingElse(t *testing.T) {
	r := Build(simulatedInput(t, "h100x8"))
	dir := filepath.Join(t.TempDir(), "records", "2025")
	files, err := Write(dir, r)
	if err != nil {
		t.Fatalf("Write into a new folder: %v", err)
	}
	want := []string{r.ID + ".json", r.ID + ".md"}
	if got := dirNames(t, dir); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("folder holds %v, want exactly %v", got, want)
	}
	if files.JSON != filepath.Join(dir, want[0]) || files.Markdown != filepath.Join(dir, want[1]) {
		t.Errorf("files %+v do not name the written paths", files)
	}
	data, err := os.ReadFile(files.JSON)
	if err != nil {
		t.Fatalf("read the JSON: %v", err)
	}
	sum := sha256.Sum256(data)
	if files.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("files.SHA256 %s is not the JSON file's sha256", files.SHA256)
	}
	var back Record
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("the written JSON does not parse: %v", err)
	}
	if back.ID != r.ID || back.APIVersion != APIVersion {
		t.Errorf("written record %s (%s), want %s (%s)", back.ID, back.APIVersion, r.ID, APIVersion)
	}
	if uri := back.Template.ResultEvidenceURI.Value; !strings.HasSuffix(uri, "; evidence file://"+files.JSON) {
		t.Errorf("result / evidence URI %q does not name %s", uri, files.JSON)
	}
	md, err := os.ReadFile(files.Markdown)
	if err != nil {
		t.Fatalf("read the Markdown: %v", err)
	}
	if !strings.Contains(string(md), "sha256 `"+files.SHA256+"`") {
		t.Errorf("the Markdown does not carry the JSON's sha256 %s", files.SHA256)
	}
	if !strings.Contains(string(md), "file://"+files.JSON) {
		t.Errorf("the Markdown does not carry the evidence URI")
	}
}

func TestWriteNamesAFolderThatCannotBeCreated(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "not-a-folder")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(blocker, "records")
	_, err := Write(dir, Build(simulatedInput(t, "h200x1")))
	if err == nil {
		t.Fatalf("Write into %s (below a file) succeeded", dir)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the folder %s", err, dir)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	cases := []struct {
		name     string
		existing string // written first when not empty
		perm     os.FileMode
	}{
		{"a new file is written with its mode", "", 0o640},
		{"an existing file is replaced whole", strings.Repeat("old record\n", 100), 0o644},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "rec.json")
			if tc.existing != "" {
				if err := os.WriteFile(path, []byte(tc.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFileAtomic(path, []byte("new\n"), tc.perm); err != nil {
				t.Fatalf("WriteFileAtomic: %v", err)
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != "new\n" {
				t.Errorf("file holds %q (%v), want %q", got, err, "new\n")
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatalf("stat %s: %v", path, err)
			}
			if st.Mode().Perm() != tc.perm {
				t.Errorf("mode %v, want %v", st.Mode().Perm(), tc.perm)
			}
			if names := dirNames(t, dir); len(names) != 1 {
				t.Errorf("folder holds %v: a temporary file was left", names)
			}
		})
	}
}

func TestWriteFileAtomicIntoAMissingFolderFailsNamingThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "rec.json")
	err := WriteFileAtomic(path, []byte("x"), 0o644)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, want one naming %s", err, path)
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("the missing folder was created (%v)", err)
	}
}
