package platform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// DriverState is what the agent reports of the driver: loaded or not (and why), paused
// or not.
type DriverState struct {
	// Loaded: the management library initialised and the backend answers.
	Loaded bool
	// Message says why it is not loaded (the last open's error), or that it is paused.
	Message string
	// Paused is what paused it (a GPU Operator label, key=value); "" when not paused.
	Paused string
	// Since is when Loaded last changed.
	Since time.Time
}

// Driver is a GPU backend that waits for the driver: it opens the real backend with
// backoff until the driver answers, opens it again when the driver goes away (a call
// fails with gpu.ErrDriverNotFound), and releases it while paused (Pause). While the
// driver is not there every call fails with an error that wraps gpu.ErrDriverNotFound,
// which the health monitor and the exporter report as unreadable GPUs. Consumers that
// hold the devices (the device plugin, the DRA plugin, the event watch) take a Session:
// it ends before the backend is released.
type Driver struct {
	name       string // the backend's kind, before it opens
	open       func() (gpu.Backend, error)
	release    func(gpu.Backend) error
	minBackoff time.Duration
	maxBackoff time.Duration
	clock      func() time.Time
	log        *slog.Logger

	use sync.RWMutex // held for reading by each call into inner, for writing to release it
	tel telemetry    // the session's scrape reader (driver_watch.go)
	mu  sync.Mutex
	// Guarded by mu.
	inner    gpu.Backend
	session  context.Context
	end      context.CancelFunc
	sessions sync.WaitGroup
	state    DriverState
	pause    string        // the pause asked for
	lost     bool          // a call saw the driver go away
	changed  chan struct{} // closed and replaced at each change of inner or state
	wake     chan struct{}
}

var _ gpu.Backend = (*Driver)(nil)

// NewDriver is a Driver of the backend kind name ("nvml", "sim") over open (which loads
// the backend) and release (which closes it), with backoff between failed opens from
// minBackoff doubling to maxBackoff.
func NewDriver(name string, open func() (gpu.Backend, error), release func(gpu.Backend) error, minBackoff, maxBackoff time.Duration, log *slog.Logger) *Driver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Driver{name: name, open: open, release: release, minBackoff: minBackoff, maxBackoff: max(minBackoff, maxBackoff),
		clock: time.Now, log: log, changed: make(chan struct{}), wake: make(chan struct{}, 1),
		state: DriverState{Message: "the driver has not been opened yet"}}
}

// State is the driver's state now.
func (d *Driver) State() DriverState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state
}

// Changed is closed at the next change of the driver's state.
func (d *Driver) Changed() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.changed
}

// Pause asks for the backend to be released because of why (a GPU Operator label) and
// kept released until Pause(""). Run carries it out.
func (d *Driver) Pause(why string) {
	d.mu.Lock()
	changed := d.pause != why
	d.pause = why
	d.mu.Unlock()
	if changed {
		d.poke()
	}
}

func (d *Driver) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run opens the backend, keeps it open and releases it while paused, until ctx ends; then
// it releases it. It returns nothing: a failed open is retried, and reported in State.
func (d *Driver) Run(ctx context.Context) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		d.mu.Lock()
		pause, open, lost := d.pause, d.inner != nil, d.lost
		d.lost = false
		d.mu.Unlock()
		switch {
		case pause != "" || lost:
			if open {
				d.close(ctx, pause)
			}
			if pause != "" {
				d.setState(false, "paused by "+pause, pause)
				d.wait(ctx, 0)
				continue
			}
		case open:
			d.wait(ctx, 0)
			continue
		}
		b, err := d.open()
		if err != nil {
			backoff = nextBackoff(backoff, d.minBackoff, d.maxBackoff)
			d.log.Info("GPU driver not available; trying again", "in", backoff, "err", err)
			d.setState(false, err.Error(), "")
			d.wait(ctx, backoff)
			continue
		}
		backoff = 0
		d.mu.Lock()
		d.inner = b
		d.session, d.end = context.WithCancel(ctx)
		d.mu.Unlock()
		d.log.Info("GPU driver available", "backend", b.Name())
		d.setState(true, "", "")
	}
	d.close(context.WithoutCancel(ctx), "")
}

// wait sleeps d (0: until poked) or until ctx ends.
func (d *Driver) wait(ctx context.Context, dur time.Duration) {
	var timer <-chan time.Time
	if dur > 0 {
		t := time.NewTimer(dur)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
	case <-d.wake:
	case <-timer:
	}
}

// close ends the session, waits for its holders and releases the backend.
func (d *Driver) close(ctx context.Context, why string) {
	d.mu.Lock()
	end := d.end
	d.mu.Unlock()
	if end == nil {
		return
	}
	end()
	done := make(chan struct{})
	go func() { d.sessions.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	d.use.Lock()
	d.mu.Lock()
	b := d.inner
	d.inner, d.session, d.end = nil, nil, nil
	d.mu.Unlock()
	var err error
	if b != nil {
		err = d.release(b)
	}
	d.use.Unlock()
	d.log.Info("GPU driver released", "why", why, "err", err)
}

func (d *Driver) setState(loaded bool, msg, paused string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := DriverState{Loaded: loaded, Message: msg, Paused: paused, Since: d.state.Since}
	if s == d.state {
		return
	}
	if loaded != d.state.Loaded || s.Since.IsZero() {
		s.Since = d.clock()
	}
	d.state = s
	close(d.changed)
	d.changed = make(chan struct{})
}

// Session waits until the backend is open and returns it with a context that ends
// before it is released (or when ctx ends). Call done when the context has ended and
// the backend is no longer used. It fails only when ctx ends.
func (d *Driver) Session(ctx context.Context) (b gpu.Backend, session context.Context, done func(), err error) {
	for {
		if ctx.Err() != nil {
			return nil, nil, nil, fmt.Errorf("waiting for the GPU driver: %w", ctx.Err())
		}
		d.mu.Lock()
		if d.inner != nil && d.session.Err() == nil {
			b, s := d.inner, d.session
			d.sessions.Add(1)
			d.mu.Unlock()
			sctx, cancel := context.WithCancel(ctx)
			stop := context.AfterFunc(s, cancel)
			var once sync.Once
			return b, sctx, func() { once.Do(func() { stop(); cancel(); d.sessions.Done() }) }, nil
		}
		changed := d.changed
		d.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, nil, nil, fmt.Errorf("waiting for the GPU driver: %w", ctx.Err())
		case <-changed:
		}
	}
}

// current is the open backend, read-locked; unlock when done with it.
func (d *Driver) current() (gpu.Backend, func(), error) {
	d.use.RLock()
	d.mu.Lock()
	b, st := d.inner, d.state
	d.mu.Unlock()
	if b == nil {
		d.use.RUnlock()
		if st.Paused != "" {
			return nil, nil, fmt.Errorf("%w: the GPUs are released: %s", gpu.ErrDriverNotFound, st.Message)
		}
		return nil, nil, fmt.Errorf("%w: %s", gpu.ErrDriverNotFound, st.Message)
	}
	return b, d.use.RUnlock, nil
}

// seen notes a call's error: a driver that went away is opened again.
func (d *Driver) seen(err error) error {
	if errors.Is(err, gpu.ErrDriverNotFound) {
		d.mu.Lock()
		d.lost = d.inner != nil
		d.mu.Unlock()
		d.poke()
	}
	return err
}

// Name is the backend's kind ("nvml" or "sim"), opened or not.
func (d *Driver) Name() string { return d.name }

// Snapshot reads the open backend.
func (d *Driver) Snapshot(ctx context.Context) (*gpu.Snapshot, error) {
	b, unlock, err := d.current()
	if err != nil {
		return nil, err
	}
	defer unlock()
	s, err := b.Snapshot(ctx)
	return s, d.seen(err)
}

// Processes lists a GPU's processes through the open backend.
func (d *Driver) Processes(ctx context.Context, uuid string) ([]gpu.Process, error) {
	b, unlock, err := d.current()
	if err != nil {
		return nil, err
	}
	defer unlock()
	pl, ok := b.(gpu.ProcessLister)
	if !ok {
		return nil, fmt.Errorf("the %s backend lists no processes: %w", b.Name(), gpu.ErrNotSupported)
	}
	p, err := pl.Processes(ctx, uuid)
	return p, d.seen(err)
}

// Close releases the backend now; Run stops opening it only when its context ends.
func (d *Driver) Close() error {
	d.close(context.Background(), "closed")
	return nil
}
