package evidence

import (
	"cmp"
	"slices"
	"time"
)

// Retention bounds the bundles kept in the folder. A zero field takes
// DefaultRetention's value; a negative one removes that bound.
type Retention struct {
	// MaxCount is the most bundles kept.
	MaxCount int `json:"maxCount,omitempty" yaml:"maxCount,omitempty"`
	// MaxAge removes bundles created longer ago.
	MaxAge time.Duration `json:"maxAge,omitempty" yaml:"maxAge,omitempty"`
	// MaxBytes bounds the bundles' total size on disk.
	MaxBytes int64 `json:"maxBytes,omitempty" yaml:"maxBytes,omitempty"`
}

// DefaultRetention keeps at most 50 bundles, 30 days, 256 MiB: enough to see a fault
// recur across a week of recoveries on an 8-GPU node, small beside a node's disk.
func DefaultRetention() Retention {
	return Retention{MaxCount: 50, MaxAge: 30 * 24 * time.Hour, MaxBytes: 256 << 20}
}

func (r Retention) withDefaults() Retention {
	d := DefaultRetention()
	if r.MaxCount == 0 {
		r.MaxCount = d.MaxCount
	}
	if r.MaxAge == 0 {
		r.MaxAge = d.MaxAge
	}
	if r.MaxBytes == 0 {
		r.MaxBytes = d.MaxBytes
	}
	return r
}

// Entry is one bundle in the folder.
type Entry struct {
	Name    string    `json:"name"`
	Node    string    `json:"node"`
	Created time.Time `json:"created"`
	SHA256  string    `json:"sha256"`
	Bytes   int64     `json:"bytes"`
}

// Prune decides which bundles to remove: first those older than MaxAge, then the oldest
// until at most MaxCount remain and their sizes sum to at most MaxBytes. The bundle named
// keep (the one just written) is never removed, even when it alone exceeds a bound.
// Order: created time, then name. Pure: it only returns the entries to remove, oldest
// first.
func Prune(entries []Entry, r Retention, keep string, now time.Time) []Entry {
	r = r.withDefaults()
	sorted := sortEntries(slices.Clone(entries))
	count := len(sorted)
	var total int64
	for _, e := range sorted {
		total += e.Bytes
	}
	var out []Entry
	for _, e := range sorted {
		if e.Name == keep {
			continue
		}
		old := r.MaxAge > 0 && now.Sub(e.Created) > r.MaxAge
		many := r.MaxCount > 0 && count > r.MaxCount
		big := r.MaxBytes > 0 && total > r.MaxBytes
		if !old && !many && !big {
			continue
		}
		out = append(out, e)
		count--
		total -= e.Bytes
	}
	return out
}

// sortEntries sorts es in place, oldest first (created time, then name), and returns it.
func sortEntries(es []Entry) []Entry {
	slices.SortFunc(es, func(a, b Entry) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Name, b.Name))
	})
	return es
}
