package record

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestAStoreKeepsTheNewestRecordsAsTheirJSON(t *testing.T) {
	base := Build(simulatedInput(t, "h100x8"))
	dir := filepath.Join(t.TempDir(), "records")
	s := &Store{Dir: dir, Keep: 3}
	for i := range 5 {
		r := *base
		r.ID = fmt.Sprintf("gpu-node-07-run%d", i)
		path, err := s.Put(&r)
		if err != nil {
			t.Fatalf("Put %s: %v", r.ID, err)
		}
		// Modification times a second apart, oldest first, as runs are.
		mt := testStart.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(path, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := *base
	r.ID = "gpu-node-07-run5"
	if _, err := s.Put(&r); err != nil {
		t.Fatal(err)
	}
	want := []string{"gpu-node-07-run3.json", "gpu-node-07-run4.json", "gpu-node-07-run5.json", "notes.txt"}
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Fatalf("folder holds %v, want the newest 3 records and the foreign file: %v", got, want)
	}
	data, err := os.ReadFile(filepath.Join(dir, "gpu-node-07-run5.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.APIVersion != APIVersion || back.Kind != Kind || back.Result != base.Result || back.ID != "gpu-node-07-run5" {
		t.Errorf("stored %s %s %s %s, want the record's JSON", back.APIVersion, back.Kind, back.Result, back.ID)
	}
	if back.Template.ResultEvidenceURI != base.Template.ResultEvidenceURI {
		t.Errorf("the store changed the evidence URI to %+v", back.Template.ResultEvidenceURI)
	}
}

func TestAStoreRefusesAnIDThatIsNotAFileName(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"", "../escape", `a\b`, ".hidden"} {
		t.Run(fmt.Sprintf("id %q", id), func(t *testing.T) {
			_, err := (&Store{Dir: dir}).Put(&Record{ID: id})
			if err == nil || !strings.Contains(err.Error(), "not a file name") {
				t.Errorf("Put(%q) = %v, want refused", id, err)
			}
		})
	}
	if got := dirNames(t, dir); len(got) != 0 {
		t.Errorf("folder holds %v after refused puts", got)
	}
}
