package cli

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/nvml"
	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// gpuOptions are the flags every command that talks to GPUs takes.
type gpuOptions struct {
	sim        string
	simElapsed time.Duration
}

func (o *gpuOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.sim, "sim", "", "use simulated GPUs: a preset ("+joinPresets()+") or a scenario YAML file (docs/sim-scenarios.md)")
	fs.DurationVar(&o.simElapsed, "sim-elapsed", 0, "with --sim: read the scenario as if this long had passed since the simulated node started (its timed faults up to then have happened)")
}

func joinPresets() string {
	s := ""
	for i, p := range sim.Presets() {
		if i > 0 {
			s += ", "
		}
		s += p
	}
	return s
}

// openBackend returns the simulated backend when --sim is set, NVML otherwise. A bad or
// unreadable scenario is a usage error (exit 2); a missing driver is a plain failure (exit 1).
func (o *gpuOptions) openBackend() (gpu.Backend, error) {
	if o.sim == "" && o.simElapsed != 0 {
		return nil, usageErrorf("--sim-elapsed needs --sim")
	}
	if o.sim != "" {
		if o.simElapsed < 0 {
			return nil, usageErrorf("--sim-elapsed %s: must not be negative", o.simElapsed)
		}
		b, err := sim.Load(o.sim, sim.WithClock(startedAgo(o.simElapsed)))
		if err != nil {
			if errors.Is(err, sim.ErrInvalidScenario) {
				return nil, usageError(err)
			}
			// A scenario file that cannot be read is bad input too: carrying on without GPU
			// facts would read the real host and kernel log into a simulated run.
			return nil, usageError(fmt.Errorf("simulated GPUs: %w", err))
		}
		return b, nil
	}
	b, err := nvml.New()
	if err != nil {
		return nil, err
	}
	return b, nil
}

// startedAgo is a clock whose first reading (the simulated node's start) lies d in the past.
func startedAgo(d time.Duration) func() time.Time {
	var once sync.Once
	return func() time.Time {
		now := time.Now()
		first := false
		once.Do(func() { first = true })
		if first {
			return now.Add(-d)
		}
		return now
	}
}
