package kmsg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
)

func TestSaveCursorRoundTripsAndLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "kmsg.cursor")
	for _, c := range []Cursor{{"boot-a", 1}, {"boot-b", 1<<64 - 1}} {
		if err := SaveCursor(p, c); err != nil {
			t.Fatal(err)
		}
		got, ok, err := LoadCursor(p)
		if err != nil || !ok || got != c {
			t.Fatalf("LoadCursor = %+v, %v, %v; want %+v", got, ok, err, c)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("directory holds %v (%v), want only the cursor", entries, err)
	}
}

func TestLoadCursor(t *testing.T) {
	cases := []struct {
		name    string
		content string // "" = no file
		wantOK  bool
		wantErr bool
	}{
		{"a missing file is no cursor and no error", "", false, false},
		{"a saved cursor is read", `{"version":1,"bootID":"b","seq":7}`, true, false},
		{"a torn file is an error", `{"version":1,"boo`, false, true},
		{"an empty file is an error", "\n", false, true},
		{"another version is an error", `{"version":2,"bootID":"b","seq":7}`, false, true},
		{"a cursor without a boot id is an error", `{"version":1,"seq":7}`, false, true},
		{"a negative sequence number is an error", `{"version":1,"bootID":"b","seq":-1}`, false, true},
		{"an unknown field is an error", `{"version":1,"bootID":"b","seq":7,"x":1}`, false, true},
		{"data after the cursor is an error", `{"version":1,"bootID":"b","seq":7} {}`, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "kmsg.cursor")
			if tc.content != "" {
				if err := os.WriteFile(p, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, ok, err := LoadCursor(p)
			if ok != tc.wantOK || (err != nil) != tc.wantErr {
				t.Fatalf("LoadCursor = ok %v, err %v", ok, err)
			}
			if err != nil && (!errors.Is(err, ErrBadCursor) || !strings.Contains(err.Error(), p)) {
				t.Fatalf("error %v must wrap ErrBadCursor and name %s", err, p)
			}
		})
	}
}

func TestSaveCursorNamesTheFileItCannotWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing-dir", "kmsg.cursor")
	if err := SaveCursor(p, Cursor{"b", 1}); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("SaveCursor = %v, want an error naming %s", err, p)
	}
}

func TestAFailingCursorSaveIsCountedAndFollowingGoesOn(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing-dir", "kmsg.cursor")
	var reported atomic.Int64
	f := &Follower{StatePath: p, BootID: "b", OnCursorError: func(err error) {
		if strings.Contains(err.Error(), p) {
			reported.Add(1)
		}
	}}
	items, err := followUntilIdle(t, f, newFakeKernel(recs(1, 3), []step{eagain}, recs(4, 5)))
	if len(items) != 5 || f.Stats().SaveErrors == 0 {
		t.Fatalf("delivered %v, stats %+v: want all 5 and counted save errors", seqs(items), f.Stats())
	}
	if got := reported.Load(); got != int64(f.Stats().SaveErrors) {
		t.Fatalf("%d save failures reported naming the file, %d counted: want each reported", got, f.Stats().SaveErrors)
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), p) {
		t.Fatalf("Run = %v, want the cancel joined with the failed final save naming %s", err, p)
	}
}

func TestReadBootID(t *testing.T) {
	cases := []struct {
		name    string
		fs      fstest.MapFS
		want    string
		wantErr bool
	}{
		{"the id is read and trimmed", fstest.MapFS{bootIDPath: {Data: []byte("667f54ae-baeb-42fb-891d-b78f4ce54b63\n")}}, "667f54ae-baeb-42fb-891d-b78f4ce54b63", false},
		{"a missing file is an error", fstest.MapFS{}, "", true},
		{"an empty file is an error", fstest.MapFS{bootIDPath: {Data: []byte("\n")}}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadBootID(tc.fs)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("ReadBootID = %q, %v", got, err)
			}
		})
	}
}

func TestTheBootIDIsReadFromTheInjectedRoot(t *testing.T) {
	state := filepath.Join(t.TempDir(), "kmsg.cursor")
	if err := SaveCursor(state, Cursor{"boot-a", 2}); err != nil {
		t.Fatal(err)
	}
	root := fstest.MapFS{bootIDPath: {Data: []byte("boot-a\n")}}
	f := &Follower{StatePath: state, Root: root}
	items, _ := followUntilIdle(t, f, newFakeKernel(recs(1, 3)))
	if f.Stats().Start != "cursor" || len(items) != 1 {
		t.Fatalf("start %q, items %v: want a resume delivering 3", f.Stats().Start, seqs(items))
	}
}
