package stress

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrChildFailed means the child process running a test died, was killed or
// broke the protocol; the message names the process and why.
var ErrChildFailed = errors.New("child process failed")

// Children is the Executor that runs every test in a child process, so that a
// kernel fault (whose sticky CUDA error poisons a whole process) or a hung
// kernel (which no CUDA call can interrupt) stays with one GPU. Each GPU gets
// its own child for its single-GPU tests; p2p runs in a child holding both
// GPUs of the pair, started after the GPUs' own children were stopped. A
// test past its deadline gets its child's process group killed, which frees
// the GPU; a later test on that GPU starts a new child.
type Children struct {
	// Command returns the child command for the GPUs (one, or a pair); the
	// child must serve the protocol of ServeChild on stdin and stdout.
	// Children sets Stdin, Stdout, Stderr and the process group.
	Command func(gpus []GPU) *exec.Cmd
	// KillWait bounds the wait for a killed child to exit (0: 30 s); a child
	// still there after it holds its GPU, whose later tests are then skipped.
	KillWait time.Duration

	mu    sync.Mutex
	slots map[string]*slot
}

// slot is the child of one GPU or pair; mu serializes the tests on it.
type slot struct {
	mu    sync.Mutex
	c     *child
	stuck error
}

var _ Executor = (*Children)(nil)

// isolatesGPUs tells Run that a timed-out test's GPU is freed and a sticky
// error stays in one GPU's process.
func (e *Children) isolatesGPUs() bool { return true }

// Device implements Executor in the GPU's child.
func (e *Children) Device(ctx context.Context, t Test, g GPU, p Plan) (Outcome, error) {
	return e.do(ctx, childRequest{Test: t, GPUs: []GPU{g}, Duration: p.Duration, PCIeMinRatio: p.PCIeMinRatio}, false)
}

// Pair implements Executor in a child holding both GPUs; the child exits
// after the pair, and the single-GPU children are stopped first.
func (e *Children) Pair(ctx context.Context, src, dst GPU, p Plan) (Outcome, error) {
	e.stopDevices([]GPU{src}, []GPU{dst})
	return e.do(ctx, childRequest{Test: TestP2P, GPUs: []GPU{src, dst}, Duration: p.Duration, PCIeMinRatio: p.PCIeMinRatio}, true)
}

// Close stops every child (closing stdin, then killing what does not exit).
func (e *Children) Close() {
	e.mu.Lock()
	slots := make([]*slot, 0, len(e.slots))
	for _, s := range e.slots {
		slots = append(slots, s)
	}
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range slots {
		wg.Go(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.stop(e.killWait())
		})
	}
	wg.Wait()
}

func (e *Children) killWait() time.Duration {
	if e.KillWait > 0 {
		return e.KillWait
	}
	return 30 * time.Second
}

func slotKey(gs []GPU) string {
	ids := make([]string, len(gs))
	for i, g := range gs {
		ids[i] = strconv.Itoa(g.Index)
	}
	return strings.Join(ids, "-")
}

func (e *Children) slot(gs []GPU) *slot {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.slots == nil {
		e.slots = map[string]*slot{}
	}
	k := slotKey(gs)
	if e.slots[k] == nil {
		e.slots[k] = &slot{}
	}
	return e.slots[k]
}

// stopDevices stops the single-GPU children of the GPUs, at once.
func (e *Children) stopDevices(gss ...[]GPU) {
	var wg sync.WaitGroup
	for _, gs := range gss {
		s := e.slot(gs)
		wg.Go(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.stop(e.killWait())
		})
	}
	wg.Wait()
}

// do runs one request in the slot's child, starting one when there is none.
// once: the child is stopped after the request.
func (e *Children) do(ctx context.Context, req childRequest, once bool) (Outcome, error) {
	s := e.slot(req.GPUs)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stuck != nil {
		return Outcome{}, s.stuck
	}
	if s.c == nil {
		c, err := startChild(e.Command(req.GPUs), slotKey(req.GPUs))
		if err != nil {
			return Outcome{}, err
		}
		s.c = c
	}
	o, keep, err := s.c.request(ctx, req)
	if !keep || once {
		if exited := s.stop(e.killWait()); !exited {
			s.stuck = fmt.Errorf("%w: the child process for GPU %s (pid %d) did not exit within %s of SIGKILL; the driver still holds the GPU",
				errHung, s.key(req.GPUs), s.pid(), e.killWait())
			if errors.Is(err, ErrChildFailed) || ctx.Err() != nil {
				err = fmt.Errorf("%w; %w", err, s.stuck)
			}
		}
	}
	return o, err
}

func (s *slot) key(gs []GPU) string { return strings.ReplaceAll(slotKey(gs), "-", " and ") }

func (s *slot) pid() int {
	if s.c == nil {
		return 0
	}
	return s.c.cmd.Process.Pid
}

// stop ends the slot's child: stdin closed, then its group killed after a
// moment; it reports whether the child exited within wait.
func (s *slot) stop(wait time.Duration) bool {
	if s.c == nil {
		return true
	}
	ok := s.c.stop(wait)
	if ok {
		s.c = nil
	}
	return ok
}
