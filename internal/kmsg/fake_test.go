package kmsg

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// step is one answer of the fake kernel log to a read: a record, or an error.
type step struct {
	rec string
	err error
	eof bool
}

func rec(seq uint64, facility int) step {
	return step{rec: fmt.Sprintf("%d,%d,%d,-;message %d\n SUBSYSTEM=test\n", facility<<3|4, seq, seq*1000, seq)}
}

func recs(from, to uint64) []step {
	var out []step
	for s := from; s <= to; s++ {
		out = append(out, rec(s, 0))
	}
	return out
}

var (
	eagain = step{err: unix.EAGAIN}
	epipe  = step{err: unix.EPIPE}
	eintr  = step{err: unix.EINTR}
	eof    = step{eof: true}
)

// fakeKernel is a scripted kernel log. Every open reads the script from the start, as
// /dev/kmsg reads from the oldest record; when the script runs out, reads answer EAGAIN
// and Wait blocks until the context is done (or a timeout passes), signalling idle.
type fakeKernel struct {
	mu       sync.Mutex
	script   []step
	opens    int
	seekEnds int
	timeouts []time.Duration // the timeouts Wait was given
	idle     chan struct{}
}

func newFakeKernel(script ...[]step) *fakeKernel {
	k := &fakeKernel{idle: make(chan struct{}, 1000)}
	for _, s := range script {
		k.script = append(k.script, s...)
	}
	return k
}

func (k *fakeKernel) set(script ...[]step) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.script = nil
	for _, s := range script {
		k.script = append(k.script, s...)
	}
}

func (k *fakeKernel) open(string) (source, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.opens++
	return &fakeSource{k: k, script: append([]step(nil), k.script...)}, nil
}

type fakeSource struct {
	k      *fakeKernel
	script []step
	closed bool
}

func (s *fakeSource) Read(buf []byte) (int, error) {
	if s.closed {
		return 0, unix.EBADF
	}
	if len(s.script) == 0 {
		return 0, unix.EAGAIN
	}
	st := s.script[0]
	s.script = s.script[1:]
	switch {
	case st.eof:
		return 0, nil
	case st.err != nil:
		return 0, st.err
	case len(st.rec) > len(buf):
		return 0, unix.EINVAL
	}
	return copy(buf, st.rec), nil
}

func (s *fakeSource) Wait(ctx context.Context, timeout time.Duration) error {
	s.k.mu.Lock()
	s.k.timeouts = append(s.k.timeouts, timeout)
	s.k.mu.Unlock()
	if len(s.script) > 0 {
		return nil
	}
	select {
	case s.k.idle <- struct{}{}:
	default:
	}
	var expire <-chan time.Time
	if timeout >= 0 {
		expire = time.After(timeout)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-expire:
		return nil
	}
}

func (s *fakeSource) SeekEnd() error {
	s.k.mu.Lock()
	s.k.seekEnds++
	s.k.mu.Unlock()
	s.script = nil
	return nil
}

func (s *fakeSource) Close() error {
	s.closed = true
	return nil
}

// followUntilIdle runs f until the fake log has nothing more to give, then cancels it and
// returns what it delivered and what Run returned.
func followUntilIdle(t *testing.T, f *Follower, k *fakeKernel) ([]Item, error) {
	t.Helper()
	f.open = k.open
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu    sync.Mutex
		items []Item
	)
	done := make(chan error, 1)
	go func() {
		done <- f.Run(ctx, func(it Item) error {
			mu.Lock()
			items = append(items, it)
			mu.Unlock()
			return nil
		})
	}()
	select {
	case <-k.idle:
		cancel()
	case err := <-done:
		return items, err
	case <-time.After(10 * time.Second):
		t.Fatal("the follower never went idle")
	}
	select {
	case err := <-done:
		mu.Lock()
		defer mu.Unlock()
		return items, err
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not stop after cancel")
	}
	return nil, nil
}

// seqs lists what the items say, records as "N" and gaps as "gap A-B (cause)".
func seqs(items []Item) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		if it.Gap != nil {
			out = append(out, fmt.Sprintf("gap %d-%d (%s)", it.Gap.From, it.Gap.To, it.Gap.Cause))
			continue
		}
		out = append(out, fmt.Sprint(it.Record.Seq))
	}
	return out
}
