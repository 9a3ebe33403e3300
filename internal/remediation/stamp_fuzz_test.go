package remediation

import (
	"testing"
	"time"
)

// FuzzParseStamp: release and resume stamps are annotations a person writes. Whatever the
// value, ParseStamp does not panic; a refused one counts as no request (zero); one it
// accepts is zero for an empty value and never lies more than MaxStampSkew past now (a
// future stamp would switch safety off).
func FuzzParseStamp(f *testing.F) {
	for _, v := range []string{"", "2026-11-29T17:00:00Z", "2099-01-01T00:00:00Z", "2026-11-29T17:04:59+00:00",
		"2026-11-29T12:00:00-23:59", "yesterday", "2026-02-30T00:00:00Z", "0000-01-01T00:00:00Z"} {
		f.Add(v)
	}
	now := time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		got, err := ParseStamp(v, now)
		if err != nil {
			if !got.IsZero() {
				t.Fatalf("a refused stamp %q gave %s", v, got)
			}
			return
		}
		if v == "" && !got.IsZero() {
			t.Fatalf("an empty stamp gave %s, want no request", got)
		}
		if got.Sub(now) > MaxStampSkew {
			t.Fatalf("accepted %q, %s ahead of now", v, got.Sub(now))
		}
	})
}
