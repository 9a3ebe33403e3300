package stress

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// hungSet remembers GPUs whose test outlived its timeout, and the first
// sticky CUDA error, after which no CUDA work can succeed in this process.
type hungSet struct {
	mu     sync.Mutex
	gpus   map[int]string
	sticky *stickyError
}

// stickyError is where a process-wide CUDA error was first seen.
type stickyError struct {
	name string
	gpu  int
	test Test
}

func (h *hungSet) check(gs ...GPU) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.sticky; s != nil {
		return fmt.Errorf("%w: CUDA stopped working in this process after GPU %d's %s test failed with %s; run gpunode stress again to test the rest",
			errHung, s.gpu, s.test, s.name)
	}
	for _, g := range gs {
		if why, ok := h.gpus[g.Index]; ok {
			return fmt.Errorf("%w: GPU %d did not finish %s", errHung, g.Index, why)
		}
	}
	return nil
}

// noteSticky records err when it is a sticky CUDA error. A unit that fails with
// the same error after another GPU's test saw it first gets that said, since
// the error then need not be its own GPU's fault.
func (h *hungSet) noteSticky(t Test, g GPU, err error) error {
	var cerr *CUDAError
	if !errors.As(err, &cerr) || !cerr.Sticky() {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sticky == nil {
		h.sticky = &stickyError{name: cerr.Name, gpu: g.Index, test: t}
		return err
	}
	if s := h.sticky; s.name == cerr.Name && (s.gpu != g.Index || s.test != t) {
		return fmt.Errorf("%w (GPU %d's %s test saw it first: the error is process-wide)", err, s.gpu, s.test)
	}
	return err
}

func (h *hungSet) mark(t Test, timeout time.Duration, gs ...GPU) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, g := range gs {
		h.gpus[g.Index] = fmt.Sprintf("%s within %s", t, timeout)
	}
}
