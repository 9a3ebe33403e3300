package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/nvml"
	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// gpuOptions are the flags every command that talks to GPUs takes.
type gpuOptions struct {
	sim string
}

func (o *gpuOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.sim, "sim", "", "use simulated GPUs: a preset ("+joinPresets()+") or a scenario YAML file")
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

// openBackend returns the simulated backend when --sim is set, NVML otherwise. A bad
// scenario is a usage error (exit 2); a missing driver is a plain failure (exit 1).
func (o *gpuOptions) openBackend() (gpu.Backend, error) {
	if o.sim != "" {
		b, err := sim.Load(o.sim)
		if err != nil {
			if errors.Is(err, sim.ErrInvalidScenario) {
				return nil, usageError(err)
			}
			return nil, fmt.Errorf("simulated GPUs: %w", err)
		}
		return b, nil
	}
	b, err := nvml.New()
	if err != nil {
		return nil, err
	}
	return b, nil
}
