package cli

import (
	"errors"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/platform"
)

// gpuOptions are the flags every command that talks to GPUs takes.
type gpuOptions struct {
	sim           string
	simElapsed    time.Duration
	simDriverFile string
}

func (o *gpuOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.sim, "sim", "", "use simulated GPUs: a preset ("+joinPresets()+") or a scenario YAML file (docs/sim-scenarios.md)")
	fs.DurationVar(&o.simElapsed, "sim-elapsed", 0, "with --sim: read the scenario as if this long had passed since the simulated node started (its timed faults up to then have happened)")
	fs.StringVar(&o.simDriverFile, "sim-driver-version-file", "", "with --sim: the host file (under --host-root) that loads the simulated driver: absent is no driver, else its first line is the driver version (a stand-in driver container writes it)")
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

// openPlatform chooses the platform once: the GPU flags, and extra's host root and kernel
// log. A bad or unreadable scenario is a usage error (exit 2); a missing driver is a plain
// failure (exit 1).
func (o *gpuOptions) openPlatform(extra platform.Options) (*platform.Platform, error) {
	extra.Sim, extra.SimElapsed, extra.SimDriverFile = o.sim, o.simElapsed, o.simDriverFile
	p, err := platform.Open(extra)
	if err != nil {
		return nil, platformError(err)
	}
	return p, nil
}

// platformError makes the platform's bad input a usage error.
func platformError(err error) error {
	if inv := (*platform.InvalidError)(nil); errors.As(err, &inv) {
		return usageError(err)
	}
	return err
}

// platformOptions are the fact flags that choose the platform.
func (o *factOptions) platformOptions() platform.Options {
	return platform.Options{HostRoot: o.hostRoot, KernelLog: o.kernelLog, TrustUserKmsg: o.trustUserKmsg}
}

// openPlatform is the platform of the fact flags.
func (o *factOptions) openPlatform() (*platform.Platform, error) {
	return o.gpu.openPlatform(o.platformOptions())
}
