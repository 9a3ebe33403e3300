// Package gputest is the GPU port's conformance suite: the contract of package gpu
// (Backend, and EventSource, TelemetrySource and ProcessLister where a backend implements
// them) as tests that any backend runs against itself. A new vendor backend is done when
// its test calls Conformance and passes; internal/gpu/sim and internal/gpu/nvml run it.
//
// It is imported only by _test.go files: nothing of it is in the binary.
package gputest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
)

// Option configures Conformance.
type Option func(*suite)

type suite struct {
	open   func(t *testing.T) gpu.Backend
	events func(t *testing.T, b gpu.Backend) int
}

// WithEvents makes the EventSource checks see events: provoke is called once Watch has
// started, makes the backend report device events (a simulated fault, a scripted NVML event
// set) and returns how many events it must deliver at least. Without it the suite checks
// only that a watch starts and ends.
func WithEvents(provoke func(t *testing.T, b gpu.Backend) int) Option {
	return func(s *suite) { s.events = provoke }
}

// check is one clause of the contract, run on a backend of its own.
type check struct {
	name string
	run  func(t *testing.T, s *suite, b gpu.Backend)
}

// Conformance checks the backends open returns against the port's contract, one subtest a
// clause, each on a fresh backend (open is called once per subtest; the suite closes what
// it opens, twice). A clause about an optional interface the backend does not implement
// skips and says so.
func Conformance(t *testing.T, open func(t *testing.T) gpu.Backend, opts ...Option) {
	t.Helper()
	s := &suite{open: open}
	for _, o := range opts {
		o(s)
	}
	var all []check
	for _, part := range [][]check{backendChecks, eventChecks, telemetryChecks, processChecks} {
		all = append(all, part...)
	}
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			b := s.open(t)
			if b == nil {
				t.Fatal("open returned no backend")
			}
			c.run(t, s, b)
		})
	}
}

// snapshot takes a snapshot that must succeed.
func snapshot(t *testing.T, b gpu.Backend) *gpu.Snapshot {
	t.Helper()
	snap, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if snap == nil {
		t.Fatal("Snapshot returned neither a snapshot nor an error")
	}
	return snap
}

// checkFieldErrors holds a set of field errors to gpu.FieldError's rules: each names its
// field and says why in words, and none is both not supported and lost (gpu.NewFieldError
// sets the two flags from errors.Is on gpu.ErrNotSupported and gpu.ErrGPULost, so a backend
// whose errors wrap the sentinels gets them right).
func checkFieldErrors(t *testing.T, where string, errs map[gpu.Field]gpu.FieldError) {
	t.Helper()
	for f, e := range errs {
		switch {
		case f == "":
			t.Errorf("%s: a field error has no field name (%q)", where, e.Message)
		case strings.TrimSpace(e.Message) == "":
			t.Errorf("%s: field %s: the error does not say why", where, f)
		case e.NotSupported && e.Lost:
			t.Errorf("%s: field %s is both not supported and lost: %q", where, f, e.Message)
		}
	}
}

// closeTwice closes a backend twice; both must succeed.
func closeTwice(t *testing.T, b gpu.Backend) {
	t.Helper()
	if err := b.Close(); err != nil {
		t.Errorf("first Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v (Close must be safe to call more than once)", err)
	}
}

// cancelled is a context that has ended.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// wantCanceled fails unless err is the context's end, wrapped.
func wantCanceled(t *testing.T, call string, err error) {
	t.Helper()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%s with a cancelled context: %v, want an error wrapping context.Canceled", call, err)
	}
}
