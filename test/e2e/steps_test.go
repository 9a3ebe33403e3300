package e2e

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/gpunode/gpunode/internal/recovery"
)

// countingSteps is recovery.Sim that counts the steps it carries out, can keep a reset
// waiting until the test lets it go (a step in flight), and can make a fault return right
// after every step (a fault no step clears).
type countingSteps struct {
	recovery.Sim
	resets, reboots atomic.Int64

	mu      sync.Mutex
	gate    chan struct{} // while set, a reset waits for it to close
	entered chan struct{} // closed when a reset starts waiting at the gate
	after   func()        // called after every step
}

// hold makes the next resets wait until open is called; entered is closed once one waits.
func (s *countingSteps) hold() (entered <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate, s.entered = make(chan struct{}), make(chan struct{})
	return s.entered
}

// open lets waiting and later resets go.
func (s *countingSteps) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
}

// afterEveryStep makes fn run after every step the agent carries out.
func (s *countingSteps) afterEveryStep(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.after = fn
}

// ResetGPU waits at the gate (if any), resets the simulated GPU and counts it.
func (s *countingSteps) ResetGPU(ctx context.Context, uuid string) error {
	s.mu.Lock()
	gate, entered := s.gate, s.entered
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-entered:
		default:
			close(entered)
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := s.Sim.ResetGPU(ctx, uuid); err != nil {
		return err
	}
	s.resets.Add(1)
	s.afterStep()
	return nil
}

// RebootNode reboots the simulated node and counts it.
func (s *countingSteps) RebootNode(ctx context.Context) (bool, error) {
	done, err := s.Sim.RebootNode(ctx)
	if err == nil {
		s.reboots.Add(1)
		s.afterStep()
	}
	return done, err
}

// PowerCycle is a counted reboot.
func (s *countingSteps) PowerCycle(ctx context.Context) (bool, error) { return s.RebootNode(ctx) }

func (s *countingSteps) afterStep() {
	s.mu.Lock()
	fn := s.after
	s.mu.Unlock()
	if fn != nil {
		fn()
	}
}
