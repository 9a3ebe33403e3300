package kmsg

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzLoadCursor: the kernel-log cursor on the host is read at every agent start. Whatever
// the file holds, LoadCursor does not panic; an error wraps ErrBadCursor and names the file;
// a cursor it accepts has a boot id and comes back the same through SaveCursor.
func FuzzLoadCursor(f *testing.F) {
	f.Add([]byte(`{"version":1,"bootID":"3f0c","seq":42}`))
	f.Add([]byte(`{"version":1,"bootID":"","seq":1}`))
	f.Add([]byte(`{"version":1,"bootID":"b","seq":-1}`))
	f.Add([]byte(`{"version":1,"bootID":"b","seq":1}{}`))
	f.Add([]byte(`{"version":1,"bootID":"b","seq":18446744073709551615,"x":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "cursor")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, ok, err := LoadCursor(path)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q: want ErrBadCursor naming the file", err)
			}
			return
		}
		if !ok || c.BootID == "" {
			t.Fatalf("accepted a cursor without a boot id: ok %v, %+v", ok, c)
		}
		if !utf8.ValidString(c.BootID) {
			return // JSON writes invalid UTF-8 as U+FFFD: no byte-exact round trip
		}
		if err := SaveCursor(path, c); err != nil {
			t.Fatal(err)
		}
		again, ok, err := LoadCursor(path)
		if err != nil || !ok || again != c {
			t.Fatalf("round trip: %+v, then %+v, %v, %v", c, again, ok, err)
		}
	})
}
