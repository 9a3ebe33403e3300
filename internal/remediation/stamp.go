package remediation

import (
	"fmt"
	"time"
)

// MaxStampSkew is how far past the controller's clock a person's stamp (a release or a
// resume request) may lie and still count: clocks of the people's machines drift, but a
// stamp further ahead would outlast every later request (a later request must be newer
// than the last one handled), so it is refused.
const MaxStampSkew = 5 * time.Minute

// ParseStamp reads a person's request stamp, an RFC 3339 time, as of now. An empty value
// is no request (the zero time, no error). A value that is not RFC 3339, or that lies more
// than MaxStampSkew past now, is refused: the error says why, and the request counts as
// never made.
func ParseStamp(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time like \"2006-01-02T15:04:05Z\"", v)
	}
	// The text names no current time: repeated refusals of one value read the same (one
	// Event series, not one Event a pass).
	if inFuture(t, now) {
		return time.Time{}, fmt.Errorf("%q is ahead of the controller's clock by more than the %s allowed for clock skew", v, MaxStampSkew)
	}
	return t, nil
}

// inFuture reports whether t lies more than MaxStampSkew past now: a stamp that no valid
// request can have.
func inFuture(t, now time.Time) bool { return t.Sub(now) > MaxStampSkew }
