package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gpunode/gpunode/internal/kmsg"
)

// kmsgFIFO is a named pipe holding kernel records 1..n (a pipe is not record-oriented:
// more than one may be read as one), kept open for writing until the
// test ends (so the monitor follows it, and does not see its end).
func kmsgFIFO(t *testing.T, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kmsg")
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo %s: %v", p, err)
	}
	w, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	for i := 1; i <= n; i++ {
		if _, err := fmt.Fprintf(w, "6,%d,%d,-;kernel line %d\n", i, i*1000, i); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func TestMonitorCursorFile(t *testing.T) {
	boot, err := kmsg.ReadBootID(os.DirFS("/"))
	if err != nil {
		t.Skipf("no boot id on this machine: %v", err)
	}
	cases := []struct {
		name    string
		cursor  string // the file's content; "-" puts it in a folder that does not exist
		from    string
		code    int
		stderr  []string
		replace bool // the file holds a good cursor afterwards
	}{
		{"a torn cursor file is bad input naming the file", "{not json", "cursor", ExitUsage,
			[]string{"--cursor-file: kernel-log cursor CURSOR", "unusable kernel-log cursor", "--from boot"}, false},
		{"a cursor of another version is bad input naming the file", `{"version":9,"bootID":"b","seq":1}`, "cursor", ExitUsage,
			[]string{"kernel-log cursor CURSOR", "want version 1"}, false},
		{"a cursor ahead of the log is bad input naming the file", fmt.Sprintf(`{"version":1,"bootID":%q,"seq":500}`, boot), "cursor", ExitUsage,
			[]string{"kernel-log cursor CURSOR", "sequence 500 is ahead of the newest record 1"}, false},
		{"from boot a bad cursor file is replaced with a warning", "{not json", "boot", ExitOK,
			[]string{"kernel-log cursor not usable or not saved", "reading the log from boot, the file will be replaced"}, true},
		{"a cursor that cannot be saved is a warning and counted, and following goes on", "-", "boot", ExitOK,
			[]string{"kernel-log cursor not usable or not saved", "kernel-log cursor: write "}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "kmsg.cursor")
			if tc.cursor == "-" {
				path = filepath.Join(dir, "missing", "kmsg.cursor")
			} else if err := os.WriteFile(path, []byte(tc.cursor), 0o600); err != nil {
				t.Fatal(err)
			}
			r := execute(t, "monitor", "--sim", "h100x8", "--kernel-log", kmsgFIFO(t, 1), "--cursor-file", path, "--from", tc.from,
				"--duration", "1500ms", "--interval", "100ms", "--json")
			var want []string
			for _, s := range tc.stderr {
				want = append(want, strings.ReplaceAll(s, "CURSOR", path))
			}
			r.check(t, tc.code, nil, want)
			if tc.code != ExitOK {
				return
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			var sum struct {
				Stats  struct{ KernelLines int } `json:"stats"`
				Cursor *kmsg.Stats               `json:"kernelCursor"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Cursor == nil {
				t.Fatalf("summary without the cursor's counts (%v): %s", err, lines[len(lines)-1])
			}
			if sum.Stats.KernelLines != 1 || sum.Cursor.Delivered != 1 {
				t.Errorf("kernel lines %d, delivered %d: want the record followed", sum.Stats.KernelLines, sum.Cursor.Delivered)
			}
			if tc.cursor == "-" && (sum.Cursor.SaveErrors == 0 || sum.Cursor.Saves != 0) {
				t.Errorf("cursor counts %+v: want failed saves counted", *sum.Cursor)
			}
			if c, ok, err := kmsg.LoadCursor(path); tc.replace && (err != nil || !ok || c != (kmsg.Cursor{BootID: boot, Seq: 1})) {
				t.Errorf("cursor afterwards %+v, %v, %v; want {%s 1}", c, ok, err, boot)
			}
		})
	}
}
