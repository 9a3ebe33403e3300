package remediation

import (
	"strings"
	"testing"
	"time"
)

func TestParseStamp(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    time.Time
		refused string
	}{
		{"no annotation is no request", "", time.Time{}, ""},
		{"a stamp in the past is a request", "2026-11-29T11:00:00Z", t0.Add(-time.Hour), ""},
		{"a stamp with nanoseconds and an offset is a request", "2026-11-29T13:00:00.5+01:00", t0.Add(500 * time.Millisecond), ""},
		{"a stamp within the clock-skew allowance is a request", "2026-11-29T12:05:00Z", t0.Add(MaxStampSkew), ""},
		{"a stamp just past the clock-skew allowance is refused", "2026-11-29T12:05:01Z", time.Time{}, "ahead of the controller's clock"},
		{"a stamp in 2099 is refused, saying it is ahead by more than the allowance", "2099-01-01T00:00:00Z", time.Time{}, "more than the 5m0s allowed for clock skew"},
		{"a date without a time is refused as not RFC 3339", "2026-11-29", time.Time{}, "is not an RFC 3339 time"},
		{"a word is refused as not RFC 3339", "now", time.Time{}, `"now" is not an RFC 3339 time`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStamp(tt.value, t0)
			switch {
			case tt.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused)):
				t.Fatalf("error %v, want one saying %q", err, tt.refused)
			case !got.Equal(tt.want):
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}
