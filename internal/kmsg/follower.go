package kmsg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"
)

// DefaultPath is the kernel's record interface to its log ring buffer.
const DefaultPath = "/dev/kmsg"

// StartMode says where a Follower starts reading.
type StartMode int

const (
	// StartCursor resumes after the saved cursor when it belongs to the running boot, and
	// starts at the oldest record of this boot otherwise (no cursor file, or a reboot).
	StartCursor StartMode = iota
	// StartBeginning ignores the cursor file (starts fresh; the file is overwritten) and
	// reads every record still in the ring buffer.
	StartBeginning
	// StartEnd delivers only records written after Run starts (SEEK_END).
	StartEnd
	// StartBoot reads every record still in the ring buffer, as StartBeginning, and keeps
	// the cursor file, as StartCursor: a saved cursor of the running boot only tells where
	// the previous run stopped, so that records lost since (overwritten while nobody read)
	// are reported as a Gap with cause GapResume before the oldest record left. A consumer
	// that keeps what it concluded from the records elsewhere (the agent: what recoveries
	// cleared) uses it. A cursor file that cannot be used is reported to OnCursorError and
	// overwritten, never fatal.
	StartBoot
)

// GapCause says when lost records were lost.
type GapCause string

const (
	// GapOverrun: the kernel overwrote records while the follower was running but behind
	// (the ring buffer is small and something logged faster than the consumer read).
	GapOverrun GapCause = "overrun"
	// GapResume: records after the saved cursor were overwritten while the follower was not
	// running (the agent was down for a while and the log was busy).
	GapResume GapCause = "resume"
)

// Gap is a range of records of the running boot that nobody will ever see: the kernel
// overwrote them before they were read. The consumer should report it, since a fault may
// have been among them.
type Gap struct {
	// From and To are the first and last lost sequence numbers, inclusive.
	From  uint64   `json:"from"`
	To    uint64   `json:"to"`
	Cause GapCause `json:"cause"`
}

// Lost is the number of records in the gap.
func (g Gap) Lost() uint64 { return g.To - g.From + 1 }

// Item is what the follower hands to its consumer: a record, or a gap.
type Item struct {
	// Record is valid when Gap is nil.
	Record Record
	// Gap is non-nil when records were lost just before the next record.
	Gap *Gap
}

// Stats counts what a Follower has done, over all its runs.
type Stats struct {
	// Start is how the last Run started: "cursor" (resumed in the same boot), "reboot"
	// (the cursor was from another boot), "fresh" (no cursor file or no state path),
	// "beginning" (StartBeginning) or "end" (StartEnd).
	Start string `json:"start"`
	// Delivered counts records handed to the consumer.
	Delivered uint64 `json:"delivered"`
	// Skipped counts records at or before the cursor: read, not delivered again.
	Skipped uint64 `json:"skipped"`
	// UserDropped counts user-facility records (written to /dev/kmsg from user space, so
	// possibly spoofed) that were dropped because TrustUserRecords is off.
	UserDropped uint64 `json:"userDropped"`
	// Malformed counts reads that did not parse as a record.
	Malformed uint64 `json:"malformed"`
	// Overruns counts EPIPE answers: the kernel overwrote the record about to be read.
	Overruns uint64 `json:"overruns"`
	// Gaps and Lost count the gaps reported and the records in them.
	Gaps uint64 `json:"gaps"`
	Lost uint64 `json:"lost"`
	// BadCursors counts cursor files StartBoot found unusable (and replaced).
	BadCursors uint64 `json:"badCursors"`
	// Saves and SaveErrors count cursor writes; LastSaveError is the latest failure.
	Saves         uint64 `json:"saves"`
	SaveErrors    uint64 `json:"saveErrors"`
	LastSaveError string `json:"lastSaveError,omitempty"`
}

// Follower follows the kernel log live, one record at a time, from a cursor that survives
// restarts. Configure the fields, then call Run; a Follower runs one Run at a time.
type Follower struct {
	// Path is the record device; empty means DefaultPath.
	Path string
	// StatePath is the cursor file. Empty: no cursor is kept, and every start is fresh.
	StatePath string
	// BootID overrides the boot id (tests); empty reads it under Root.
	BootID string
	// Root is the host root that the boot id is read under; nil means os.DirFS("/").
	Root fs.FS
	// Start says where to start; the zero value resumes from the cursor.
	Start StartMode
	// TrustUserRecords also delivers user-facility records. Anything that may write
	// /dev/kmsg can write those, so only tests should set it.
	TrustUserRecords bool
	// MinSaveInterval rate-limits cursor writes: the cursor is written after each batch (the
	// reads up to the point where the log has nothing more), at most once per interval, and
	// on exit. Zero writes after every batch.
	MinSaveInterval time.Duration
	// OnCursorError, when set, is called with every failed cursor save (following goes on:
	// a full disk must not blind the node) and, with StartBoot, with a cursor file that
	// cannot be used (it is ignored and overwritten).
	OnCursorError func(err error)

	open func(path string) (source, error) // tests inject a fake
	now  func() time.Time

	mu    sync.Mutex
	stats Stats
}

func (f *Follower) count(update func(*Stats)) {
	f.mu.Lock()
	update(&f.stats)
	f.mu.Unlock()
}

func (f *Follower) path() string {
	if f.Path == "" {
		return DefaultPath
	}
	return f.Path
}

func (f *Follower) bootID() (string, error) {
	if f.BootID != "" {
		return f.BootID, nil
	}
	root := f.Root
	if root == nil {
		root = os.DirFS("/")
	}
	return ReadBootID(root)
}

// Run follows the log until ctx is done, fn returns an error, or the input ends (a FIFO
// whose writer closed; /dev/kmsg never ends). It hands fn every trusted record and every
// gap in order, and saves the cursor after each batch and on return. A record is marked
// read only once fn has returned nil for it, so after a crash at most the records since
// the last save are delivered again, and none is missed. Run returns ctx.Err() when
// cancelled, fn's error (wrapped) when fn fails, and nil at the end of the input.
func (f *Follower) Run(ctx context.Context, fn func(Item) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := f.prepare()
	if err != nil {
		return err
	}
	open := f.open
	if open == nil {
		open = openDev
	}
	src, err := open(f.path())
	if err != nil {
		return err
	}
	defer func() {
		if cerr := src.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close kernel log %s: %w", f.path(), cerr)
		}
	}()
	if f.Start == StartEnd {
		if err := src.SeekEnd(); err != nil {
			return err
		}
	}
	defer func() {
		if r.dirty {
			if serr := r.save(); serr != nil {
				r.saveFailed(serr)
				err = errors.Join(err, serr)
			}
		}
	}()
	return r.loop(ctx, src, fn)
}

// prepare reads the boot id and the cursor and decides where to start.
func (f *Follower) prepare() (*run, error) {
	r := &run{f: f, now: f.now}
	if r.now == nil {
		r.now = time.Now
	}
	if f.StatePath != "" {
		boot, err := f.bootID()
		if err != nil {
			return nil, err
		}
		r.cur.BootID = boot
	}
	start := ""
	switch f.Start {
	case StartCursor:
		start = "fresh"
		if f.StatePath == "" {
			break
		}
		c, ok, err := LoadCursor(f.StatePath)
		if err != nil {
			return nil, err
		}
		switch {
		case !ok:
		case c.BootID != r.cur.BootID:
			start = "reboot"
		default:
			start = "cursor"
			r.cur, r.have, r.resumed = c, true, true
		}
	case StartBeginning:
		start = "beginning"
	case StartEnd:
		start = "end"
	case StartBoot:
		start = "boot"
		if f.StatePath == "" {
			break
		}
		c, ok, err := LoadCursor(f.StatePath)
		switch {
		case err != nil:
			f.count(func(s *Stats) { s.BadCursors++ })
			if f.OnCursorError != nil {
				f.OnCursorError(fmt.Errorf("%w; reading the log from boot, the file will be replaced", err))
			}
		case ok && c.BootID == r.cur.BootID:
			r.stopped, r.stoppedKnown = c.Seq, true
		}
	default:
		return nil, fmt.Errorf("kernel log %s: unknown start mode %d", f.path(), f.Start)
	}
	f.count(func(s *Stats) { s.Start = start })
	return r, nil
}

// Stats returns a snapshot of the counters; it is safe to call while Run runs.
func (f *Follower) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}
