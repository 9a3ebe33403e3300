package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzFileClearedLoad: the cleared-XIDs file on the host is read after any crash or edit.
// Whatever it holds, Load does not panic; an error names the file; a set it accepts has a
// boot id whenever it has lines, only lines with text and a count, and comes back the same
// through Save and Load.
func FuzzFileClearedLoad(f *testing.F) {
	f.Add([]byte(`{"version":1,"bootID":"b1","lines":[{"line":"NVRM: Xid (PCI:0000:17:00): 79","n":2,"by":"reset"}]}`))
	f.Add([]byte(`{"version":1,"bootID":"","lines":[]}`))
	f.Add([]byte(`{"version":2,"bootID":"b1","lines":[]}`))
	f.Add([]byte(`{"version":1,"bootID":"b1","lines":[{"line":"","n":0}]}`))
	f.Add([]byte(`{"version":1,"extra":true}`))
	f.Add([]byte("\x00\xff{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		store := FileCleared{Path: filepath.Join(dir, "cleared.json")}
		if err := os.WriteFile(store.Path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, ok, err := store.Load()
		if err != nil {
			if !strings.Contains(err.Error(), store.Path) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if !ok {
			t.Fatal("a file that is there loaded as no file")
		}
		if len(got.Lines) > 0 && got.BootID == "" {
			t.Fatalf("accepted lines without a boot id: %+v", got)
		}
		for _, l := range got.Lines {
			if l.Line == "" || l.N <= 0 {
				t.Fatalf("accepted a line without text or count: %+v", l)
			}
		}
		if !validUTF8(got) { // JSON writes invalid UTF-8 as U+FFFD: no byte-exact round trip
			return
		}
		if err := store.Save(got); err != nil {
			t.Fatal(err)
		}
		again, ok, err := store.Load()
		if err != nil || !ok {
			t.Fatalf("a saved set does not load: %v", err)
		}
		if len(got.Lines) == 0 {
			got.Lines, again.Lines = nil, nil
		}
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("round trip changed the set: %+v, then %+v", got, again)
		}
	})
}

func validUTF8(c ClearedXIDs) bool {
	if !utf8.ValidString(c.BootID) {
		return false
	}
	for _, l := range c.Lines {
		if !utf8.ValidString(l.Line) || !utf8.ValidString(l.By) {
			return false
		}
	}
	return true
}

// FuzzFileJournalLoad: the remediation journal (the step in flight) is read at every agent
// start. Whatever it holds, Load does not panic; an error names the file; an entry it
// accepts has an id and a step, and Save then Load gives an entry that loads again the same.
func FuzzFileJournalLoad(f *testing.F) {
	f.Add([]byte(`{"id":3,"step":"gpu-reset","gpus":["GPU-1"],"bootID":"b1","started":"2026-11-29T17:00:00Z"}`))
	f.Add([]byte(`{"id":3,"step":"gpu-reset","done":true,"cleared":[{"line":"x","n":1}],"answer":{"id":3}}`))
	f.Add([]byte(`{"id":0,"step":""}`))
	f.Add([]byte(`{"id":-1,"step":"reboot","started":"not a time"}`))
	f.Add([]byte("null"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		j := FileJournal{Path: filepath.Join(dir, "journal.json")}
		if err := os.WriteFile(j.Path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, ok, err := j.Load()
		if err != nil {
			if !strings.Contains(err.Error(), j.Path) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if !ok || got.ID <= 0 || got.Step == "" {
			t.Fatalf("accepted an entry without an id or a step: ok %v, %+v", ok, got)
		}
		if err := j.Save(got); err != nil {
			t.Fatal(err)
		}
		once, ok, err := j.Load()
		if err != nil || !ok {
			t.Fatalf("a saved entry does not load: %v", err)
		}
		if err := j.Save(once); err != nil {
			t.Fatal(err)
		}
		twice, _, err := j.Load()
		if err != nil || !reflect.DeepEqual(once, twice) {
			t.Fatalf("a saved entry does not load the same: %+v, then %+v (%v)", once, twice, err)
		}
	})
}
