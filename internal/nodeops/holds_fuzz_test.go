package nodeops

import (
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzParseHolds: the holds annotation is on the Node, where anyone who may patch Nodes
// writes. Whatever it holds, ParseHolds does not panic; an error wraps ErrMalformedHolds;
// holds it accepts have an owner each, one hold per owner, sorted, and Render then
// ParseHolds gives them back (an empty set renders as no annotation).
func FuzzParseHolds(f *testing.F) {
	f.Add(`[{"owner":"acceptance","reason":"gpu-count: 7 GPUs found","since":"2026-11-29T17:00:00Z"}]`)
	f.Add(`[{"owner":"remediation","reason":"xid 79","since":"2026-11-29T17:01:00Z"},{"owner":"operator","reason":"rack","since":"2026-11-29T17:02:00Z"}]`)
	f.Add(`[{"owner":"a"},{"owner":"a"}]`)
	f.Add(`[{"owner":""}]`)
	f.Add(`[]`)
	f.Add(`{not json`)
	f.Add(`[{"owner":"x","since":"9999-12-31T23:59:59+23:59"}]`)
	f.Fuzz(func(t *testing.T, value string) {
		holds, err := ParseHolds("node-1", value)
		if err != nil {
			if !errors.Is(err, ErrMalformedHolds) {
				t.Fatalf("error %v does not wrap ErrMalformedHolds", err)
			}
			return
		}
		seen := map[string]bool{}
		for i, h := range holds {
			if h.Owner == "" || seen[h.Owner] || (i > 0 && holds[i-1].Owner > h.Owner) {
				t.Fatalf("accepted holds with an empty, repeated or unsorted owner: %+v", holds)
			}
			seen[h.Owner] = true
			if !utf8.ValidString(h.Owner) || !utf8.ValidString(h.Reason) {
				return // JSON writes invalid UTF-8 as U+FFFD: no byte-exact round trip
			}
		}
		again, err := ParseHolds("node-1", holds.Render())
		if err != nil || !again.Equal(holds) {
			t.Fatalf("round trip: %+v, then %+v, %v", holds, again, err)
		}
	})
}
