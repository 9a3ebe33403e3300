package kmsg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// saveBatchMax bounds how many records are handled between two cursor saves when the log
// never runs dry (a flood), so a crash repeats at most this many (subject to
// MinSaveInterval).
const saveBatchMax = 1024

// run is the state of one Follower.Run.
type run struct {
	f   *Follower
	now func() time.Time

	cur     Cursor // the last record handled (read and either delivered or dropped)
	have    bool   // cur.Seq is meaningful: a cursor was resumed or a record handled
	resumed bool   // started from a saved cursor: check it is not ahead of the log
	// stopped is where the previous run stopped (StartBoot with a cursor of this boot).
	stopped      uint64
	stoppedKnown bool
	read         bool   // a record has been read in this run
	maxSeen      uint64 // highest sequence number read in this run

	dirty    bool // cur differs from the saved cursor
	batch    int  // records handled since the last save
	lastSave time.Time
}

func (r *run) loop(ctx context.Context, src source, fn func(Item) error) error {
	buf := make([]byte, readBufSize)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := src.Read(buf)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			if err := r.idle(ctx, src); err != nil {
				return err
			}
			continue
		case errors.Is(err, unix.EPIPE):
			// The kernel moved our position to the oldest record it still has; the gap
			// shows up as a jump in the sequence numbers of the next record.
			r.f.count(func(s *Stats) { s.Overruns++ })
			continue
		case err != nil:
			return fmt.Errorf("read kernel log %s: %w", r.f.path(), err)
		case n == 0:
			return nil // end of input (a FIFO whose writer closed)
		}
		if err := r.handle(buf[:n], fn); err != nil {
			return err
		}
	}
}

// handle parses one record and hands it on, after the gap before it if there is one.
func (r *run) handle(b []byte, fn func(Item) error) error {
	rec, err := ParseRecord(b)
	if err != nil {
		r.f.count(func(s *Stats) { s.Malformed++ })
		return nil
	}
	first := !r.read
	r.read = true
	r.maxSeen = max(r.maxSeen, rec.Seq)
	if r.have && rec.Seq <= r.cur.Seq {
		r.f.count(func(s *Stats) { s.Skipped++ })
		return nil
	}
	from, gap := uint64(0), false
	switch {
	case r.have && rec.Seq > r.cur.Seq+1:
		from, gap = r.cur.Seq+1, true
	case first && !r.have && r.stoppedKnown && rec.Seq > r.stopped+1:
		from, gap = r.stopped+1, true // StartBoot: lost since the previous run stopped
	}
	if gap {
		g := Gap{From: from, To: rec.Seq - 1, Cause: GapOverrun}
		if first {
			g.Cause = GapResume
		}
		r.f.count(func(s *Stats) { s.Gaps++; s.Lost += g.Lost() })
		if err := fn(Item{Gap: &g}); err != nil {
			return fmt.Errorf("kernel log %s: handling the gap %d-%d: %w", r.f.path(), g.From, g.To, err)
		}
	}
	if !rec.FromKernel() && !r.f.TrustUserRecords {
		r.f.count(func(s *Stats) { s.UserDropped++ })
	} else {
		if err := fn(Item{Record: rec}); err != nil {
			return fmt.Errorf("kernel log %s: handling record %d: %w", r.f.path(), rec.Seq, err)
		}
		r.f.count(func(s *Stats) { s.Delivered++ })
	}
	r.cur.Seq, r.have = rec.Seq, true
	r.dirty = r.f.StatePath != ""
	r.batch++
	if r.batch >= saveBatchMax {
		r.maybeSave()
	}
	return nil
}

// idle runs when the log has nothing more: the batch is over. It checks a resumed cursor,
// saves the cursor when due, and waits for the next record (or for the next save).
func (r *run) idle(ctx context.Context, src source) error {
	if r.resumed && r.read {
		r.resumed = false
		if r.maxSeen < r.cur.Seq {
			r.dirty = false // keep the file as it is for inspection
			return fmt.Errorf("kernel-log cursor %s: %w: sequence %d is ahead of the newest record %d of boot %s",
				r.f.StatePath, ErrBadCursor, r.cur.Seq, r.maxSeen, r.cur.BootID)
		}
	}
	timeout := time.Duration(-1)
	if r.dirty {
		if wait := r.maybeSave(); wait > 0 {
			timeout = wait
		}
	}
	return src.Wait(ctx, timeout)
}

// maybeSave saves the cursor unless the last save was less than MinSaveInterval ago; it
// returns how long until a save is due when it did not save.
func (r *run) maybeSave() time.Duration {
	if !r.dirty {
		return 0
	}
	now := r.now()
	if due := r.lastSave.Add(r.f.MinSaveInterval); now.Before(due) {
		return due.Sub(now)
	}
	if err := r.save(); err != nil {
		// Keep following: a full disk must not blind the node to GPU faults. The failure is
		// counted and reported, and the last one is returned by Run if the final save fails too.
		r.saveFailed(err)
	}
	return 0
}

func (r *run) saveFailed(err error) {
	r.f.count(func(s *Stats) { s.SaveErrors++; s.LastSaveError = err.Error() })
	if r.f.OnCursorError != nil {
		r.f.OnCursorError(err)
	}
}

func (r *run) save() error {
	r.lastSave = r.now()
	r.batch = 0
	if err := SaveCursor(r.f.StatePath, r.cur); err != nil {
		return err
	}
	r.dirty = false
	r.f.count(func(s *Stats) { s.Saves++ })
	return nil
}
