package sim

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

const (
	// eventBuffer is the capacity of the channel Watch returns.
	eventBuffer = 64
	// slowClockWait is the shortest timer a watcher arms once a timer has fired before the
	// backend's clock reached the next fault: that clock is not the wall clock (a fake clock
	// in a test), and its owner calls Tick after moving it.
	slowClockWait = time.Second
)

var _ gpu.EventSource = (*Backend)(nil)

// hub is the event side of a backend: the scenario's timed faults, the faults injected
// while someone watches, and the watchers. It is guarded by Backend.mu.
type hub struct {
	timed    []Fault // the scenario's faults, sorted by At; never modified
	injected []Fault // injected faults not yet seen by every watcher, in injection order
	base     int     // the number of injected faults dropped from the front of injected
	watchers map[*watcher]struct{}
}

// watcher is one Watch's position in the fault streams.
type watcher struct {
	wake      chan struct{} // capacity 1: notifications coalesce
	nextTimed int           // index in hub.timed of the next timed fault to deliver
	seen      int           // injected faults delivered, counted from the first ever
}

// inject records an injected fault for the watchers and wakes them.
func (h *hub) inject(f Fault) {
	if len(h.watchers) == 0 {
		h.base++ // nobody watches: nothing to keep
		return
	}
	h.injected = append(h.injected, f)
	h.wakeAll()
}

func (h *hub) wakeAll() {
	for w := range h.watchers {
		select {
		case w.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// trim drops the injected faults that every watcher has delivered.
func (h *hub) trim() {
	end := h.base + len(h.injected)
	for w := range h.watchers {
		if w.seen < end {
			return
		}
	}
	h.base, h.injected = end, nil
}

// Watch implements gpu.EventSource: every fault whose time comes while watching becomes
// events on the channel, in fault order (see docs/sim-scenarios.md, "Watching events"):
// timed faults of the scenario when the backend's clock reaches their time, and faults given
// to Inject at once. Faults whose time came before Watch are not delivered (Snapshot shows
// them). Each watcher gets every event. The channel closes when ctx ends.
//
// Timed faults are delivered by a timer set from the backend's clock. With a fake clock
// (WithClock), call Tick after moving it.
func (b *Backend) Watch(ctx context.Context) (<-chan gpu.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sim watch: %w", err)
	}
	w := &watcher{wake: make(chan struct{}, 1)}
	b.mu.Lock()
	h := &b.events
	elapsed := b.clock().Sub(b.start)
	w.nextTimed = sort.Search(len(h.timed), func(i int) bool { return h.timed[i].At > elapsed })
	w.seen = h.base + len(h.injected)
	if h.watchers == nil {
		h.watchers = map[*watcher]struct{}{}
	}
	h.watchers[w] = struct{}{}
	b.mu.Unlock()
	out := make(chan gpu.Event, eventBuffer)
	go b.watch(ctx, w, out)
	return out, nil
}

// Tick makes every watcher read the clock now and deliver the timed faults whose time has
// come. With the real clock a timer does this on time; a test that moves a fake clock calls
// Tick after each move. Injected faults need no Tick.
func (b *Backend) Tick() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events.wakeAll()
}

// watch is a watcher's goroutine: deliver what is due, then sleep until a wake-up (Inject,
// Tick), the next timed fault's timer, or the end of ctx.
func (b *Backend) watch(ctx context.Context, w *watcher, out chan<- gpu.Event) {
	defer close(out)
	defer b.unwatch(w)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	fired := false
	for {
		faults, timedDue, next, more := b.due(w)
		for _, f := range faults {
			for _, e := range faultEvents(f, b.base, b.start.Add(f.At)) {
				select {
				case out <- e:
				case <-ctx.Done():
					return
				}
			}
		}
		if more {
			if fired && timedDue == 0 {
				next = max(next, slowClockWait)
			}
			timer.Reset(next)
		}
		fired = false
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-timer.C:
			fired = true
		}
	}
}

// due takes the faults that w has not delivered and whose time has come, in the order they
// apply. It also returns how many of them are timed, and, when more timed faults are to
// come, how long until the next one by the backend's clock.
func (b *Backend) due(w *watcher) (faults []Fault, timedDue int, next time.Duration, more bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := &b.events
	elapsed := b.clock().Sub(b.start)
	for w.nextTimed < len(h.timed) && h.timed[w.nextTimed].At <= elapsed {
		faults = append(faults, h.timed[w.nextTimed])
		w.nextTimed++
	}
	timedDue = len(faults)
	faults = append(faults, h.injected[w.seen-h.base:]...)
	w.seen = h.base + len(h.injected)
	h.trim()
	// Timed faults first on a tie: replay applies an injected fault after those at its time.
	slices.SortStableFunc(faults, func(a, c Fault) int { return cmpDuration(a.At, c.At) })
	if w.nextTimed < len(h.timed) {
		return faults, timedDue, h.timed[w.nextTimed].At - elapsed, true
	}
	return faults, timedDue, 0, false
}

// unwatch forgets a watcher whose goroutine ends.
func (b *Backend) unwatch(w *watcher) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.events.watchers, w)
	b.events.trim()
}
