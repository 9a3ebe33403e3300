package podresources

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var trainA = []Pod{{"ml", "train-0", "main"}}

func TestKubeletRestartKeepsTheLastMapForKeepStaleThenDropsIt(t *testing.T) {
	socket := socketPath(t)
	f := &fakeKubelet{}
	f.set(pod("ml", "train-0", ctr("main", dev("nvidia.com/gpu", "GPU-a"))))
	stop := serve(t, socket, f)
	clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	logs := &logCount{}
	c := New(Options{Socket: socket, Refresh: 10 * time.Second, Log: slog.New(logs), Clock: clock.Now})
	defer func() { _ = c.Close() }()
	refresh := func(wantErr bool) {
		t.Helper()
		if err := c.Refresh(t.Context()); (err != nil) != wantErr {
			t.Fatalf("Refresh error = %v, want error %v", err, wantErr)
		}
	}

	refresh(false)
	good := clock.Now()
	stop() // the kubelet exits and removes its socket
	for range 3 {
		clock.advance(10 * time.Second) // 30s = KeepStale (3×Refresh) by the last one
		refresh(true)
		if got := c.PodsFor("GPU-a"); !slices.Equal(got, trainA) {
			t.Fatalf("within KeepStale PodsFor(GPU-a) = %v, want the last good %v", got, trainA)
		}
	}
	s := c.Stats()
	if !s.Stale || s.Failures != 3 || !errors.Is(s.Err, ErrNoSocket) || !s.LastSuccess.Equal(good) || s.Pods != 1 {
		t.Errorf("Stats while stale = %+v, want stale, 3 failures, ErrNoSocket, last success %v, 1 pod", s, good)
	}

	clock.advance(time.Second)
	refresh(true)
	if got := c.PodsFor("GPU-a"); got != nil {
		t.Errorf("past KeepStale PodsFor(GPU-a) = %v, want nil", got)
	}
	if s := c.Stats(); s.Stale || s.Pods != 0 || s.Devices != 0 || s.Failures != 4 {
		t.Errorf("Stats past KeepStale = %+v, want not stale, no pods or devices, 4 failures", s)
	}

	f.set(pod("ml", "train-1", ctr("main", dev("nvidia.com/gpu", "GPU-b"))))
	serve(t, socket, f) // the kubelet comes back with other pods
	refresh(false)
	if a, b := c.PodsFor("GPU-a"), c.PodsFor("GPU-b"); a != nil || !slices.Equal(b, []Pod{{"ml", "train-1", "main"}}) {
		t.Errorf("after restart PodsFor(GPU-a), (GPU-b) = %v, %v; want nil and train-1", a, b)
	}
	if s := c.Stats(); s.Err != nil || s.Failures != 0 || s.Stale || !s.LastSuccess.Equal(clock.Now()) {
		t.Errorf("Stats after restart = %+v, want fresh, no error", s)
	}
	want := []string{"pod attribution active", "kubelet pod-resources socket absent: pod attribution paused", "pod attribution restored"}
	if got := logs.got(); !slices.Equal(got, want) {
		t.Errorf("log lines = %q, want %q", got, want)
	}
}

func TestNegativeKeepStaleDropsTheMapAtTheFirstFailure(t *testing.T) {
	socket := socketPath(t)
	f := &fakeKubelet{}
	f.set(pod("ml", "train-0", ctr("main", dev("nvidia.com/gpu", "GPU-a"))))
	stop := serve(t, socket, f)
	c := New(Options{Socket: socket, KeepStale: -1, Log: slog.New(slog.DiscardHandler)})
	defer func() { _ = c.Close() }()
	if err := c.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := c.Refresh(t.Context()); err == nil {
		t.Fatal("Refresh after the kubelet stopped succeeded")
	}
	if got := c.PodsFor("GPU-a"); got != nil {
		t.Errorf("PodsFor(GPU-a) = %v, want nil", got)
	}
}

func TestAbsentSocketLogsOnceAndAttributesNothing(t *testing.T) {
	socket := socketPath(t)
	logs := &logCount{}
	c := New(Options{Socket: socket, Log: slog.New(logs)})
	defer func() { _ = c.Close() }()
	for range 50 {
		err := c.Refresh(t.Context())
		if !errors.Is(err, ErrNoSocket) {
			t.Fatalf("Refresh error = %v, want ErrNoSocket", err)
		}
	}
	if got := c.PodsFor("GPU-a"); got != nil {
		t.Errorf("PodsFor(GPU-a) = %v, want nil", got)
	}
	if s := c.Stats(); s.Failures != 50 || !s.LastSuccess.IsZero() || s.Stale {
		t.Errorf("Stats = %+v, want 50 failures, never a success", s)
	}
	if got := logs.got(); len(got) != 1 {
		t.Errorf("50 refreshes without a socket logged %q, want one line", got)
	}
}

func TestASocketNobodyServesIsAFailureOtherThanAbsence(t *testing.T) {
	socket := socketPath(t)
	deadSocket(t, socket)
	logs := &logCount{}
	c := New(Options{Socket: socket, Log: slog.New(logs)})
	defer func() { _ = c.Close() }()
	for range 5 {
		err := c.Refresh(t.Context())
		if err == nil || errors.Is(err, ErrNoSocket) || status.Code(err) != codes.Unavailable {
			t.Fatalf("Refresh error = %v, want Unavailable, not ErrNoSocket", err)
		}
	}
	want := []string{"kubelet pod-resources unavailable: pod attribution paused"}
	if got := logs.got(); !slices.Equal(got, want) {
		t.Errorf("log lines = %q, want %q", got, want)
	}
}

func TestRunRecoversWhenTheSocketAppearsWithOneLineEachWay(t *testing.T) {
	socket := socketPath(t)
	logs := &logCount{}
	c := New(Options{Socket: socket, Refresh: 20 * time.Millisecond, Log: slog.New(logs)})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	eventually(t, "several refreshes failed", func() bool { return c.Stats().Failures >= 5 })
	f := &fakeKubelet{}
	f.set(pod("ml", "train-0", ctr("main", dev("nvidia.com/gpu", "GPU-a"))))
	stop := serve(t, socket, f)
	eventually(t, "the pod is attributed", func() bool { return c.PodsFor("GPU-a") != nil })
	stop()
	eventually(t, "the map is dropped", func() bool { return c.PodsFor("GPU-a") == nil })
	cancel()
	wg.Wait()
	want := []string{
		"kubelet pod-resources socket absent: pod attribution paused",
		"pod attribution restored",
		"kubelet pod-resources socket absent: pod attribution paused",
	}
	if got := logs.got(); !slices.Equal(got, want) {
		t.Errorf("log lines = %q, want %q", got, want)
	}
}

func TestRunStopsPromptlyWhenItsContextEnds(t *testing.T) {
	socket := socketPath(t)
	f := &fakeKubelet{delay: time.Hour} // a kubelet that never answers
	serve(t, socket, f)
	logs := &logCount{}
	c := New(Options{Socket: socket, Refresh: time.Hour, Log: slog.New(logs)})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	eventually(t, "the kubelet was called", func() bool { return f.callCount() > 0 })
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if got := logs.got(); len(got) != 0 {
		t.Errorf("shutting down logged %q, want nothing", got)
	}
}

func TestPodsForDuringRefreshesIsRaceFree(t *testing.T) {
	socket := socketPath(t)
	f := &fakeKubelet{}
	serve(t, socket, f)
	c := New(Options{Socket: socket, Refresh: time.Millisecond, Log: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })
	wg.Go(func() { // the kubelet's pods change under the readers
		for i := 0; ctx.Err() == nil; i++ {
			if i%2 == 0 {
				f.set(pod("ml", "train-0", ctr("main", dev("nvidia.com/gpu", "GPU-a"))))
			} else {
				f.set(pod("ml", "train-1", ctr("main", dev("nvidia.com/gpu", "GPU-a::1"), dev("nvidia.com/gpu", "GPU-b"))))
			}
			time.Sleep(time.Millisecond)
		}
	})
	seen := make([]bool, 2) // two readers on a two-core machine, yielding so refreshes run
	for r := range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
				for _, p := range c.PodsFor("GPU-a") {
					seen[r] = seen[r] || p.Name != ""
				}
				_ = c.Stats()
				runtime.Gosched()
			}
		})
	}
	eventually(t, "refreshes ran", func() bool { return f.callCount() > 20 })
	cancel()
	wg.Wait()
	if !slices.Contains(seen, true) {
		t.Error("no reader ever saw a pod on GPU-a")
	}
}
