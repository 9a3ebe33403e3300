package evidence

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

func TestPrune(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	// e(i, ageHours, bytes): bundle i, created ageHours ago.
	e := func(i, ageHours int, bytes int64) Entry {
		return Entry{Name: fmt.Sprintf("b%d", i), Created: now.Add(-time.Duration(ageHours) * time.Hour), Bytes: bytes}
	}
	unbounded := Retention{MaxCount: -1, MaxAge: -1, MaxBytes: -1}
	tests := []struct {
		name    string
		entries []Entry
		r       Retention
		keep    string
		want    []string
	}{
		{"nothing is removed within every bound", []Entry{e(1, 3, 10), e(2, 2, 10)}, Retention{MaxCount: 5, MaxAge: 24 * time.Hour, MaxBytes: 100}, "b2", nil},
		{"over the count, the oldest go first", []Entry{e(3, 1, 1), e(1, 3, 1), e(2, 2, 1)}, Retention{MaxCount: 1, MaxAge: -1, MaxBytes: -1}, "b3", []string{"b1", "b2"}},
		{"bundles older than the age limit go even under the count", []Entry{e(1, 50, 1), e(2, 1, 1)}, Retention{MaxCount: 10, MaxAge: 48 * time.Hour, MaxBytes: -1}, "b2", []string{"b1"}},
		{"over the byte total, the oldest go until it fits", []Entry{e(1, 3, 40), e(2, 2, 40), e(3, 1, 40)}, Retention{MaxCount: -1, MaxAge: -1, MaxBytes: 90}, "b3", []string{"b1"}},
		{"the bundle just written is kept even when it alone is over the byte total", []Entry{e(1, 3, 10), e(2, 0, 500)}, Retention{MaxCount: -1, MaxAge: -1, MaxBytes: 100}, "b2", []string{"b1"}},
		{"the bundle just written is kept even when it is the oldest by its clock", []Entry{e(1, 99, 1), e(2, 1, 1)}, Retention{MaxCount: 1, MaxAge: time.Hour, MaxBytes: -1}, "b1", []string{"b2"}},
		{"equal created times are ordered by name", []Entry{e(2, 1, 1), e(1, 1, 1), e(3, 0, 1)}, Retention{MaxCount: 2, MaxAge: -1, MaxBytes: -1}, "b3", []string{"b1"}},
		{"negative fields remove every bound", []Entry{e(1, 9999, 1<<40), e(2, 1, 1)}, unbounded, "b2", nil},
		{"zero fields take the defaults (30 days)", []Entry{e(1, 31*24, 1), e(2, 1, 1)}, Retention{}, "b2", []string{"b1"}},
		{"no bundles, nothing to remove", nil, Retention{MaxCount: 1}, "x", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range Prune(tc.entries, tc.r, tc.keep, now) {
				got = append(got, r.Name)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Prune removed %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPruneNeverRemovesKeepAndMeetsTheBounds(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for seed := range 200 {
		var es []Entry
		n := seed%17 + 1
		for i := range n {
			es = append(es, Entry{Name: fmt.Sprintf("b%02d", i), Created: now.Add(-time.Duration((seed*7+i*13)%100) * time.Hour),
				Bytes: int64((seed*31+i*17)%50 + 1)})
		}
		keep := es[seed%n].Name
		r := Retention{MaxCount: seed%5 + 1, MaxAge: time.Duration(seed%60+1) * time.Hour, MaxBytes: int64(seed%120 + 1)}
		removed := map[string]bool{}
		for _, e := range Prune(es, r, keep, now) {
			removed[e.Name] = true
		}
		if removed[keep] {
			t.Fatalf("seed %d: removed the bundle just written", seed)
		}
		count, total := 0, int64(0)
		for _, e := range es {
			if removed[e.Name] {
				continue
			}
			count++
			total += e.Bytes
			if e.Name != keep && now.Sub(e.Created) > r.MaxAge {
				t.Fatalf("seed %d: kept %s, older than the age limit", seed, e.Name)
			}
		}
		if count > 1 && (count > r.MaxCount || total > r.MaxBytes) {
			t.Fatalf("seed %d: kept %d bundles, %d bytes, over %+v with more than the new one left", seed, count, total, r)
		}
	}
}
