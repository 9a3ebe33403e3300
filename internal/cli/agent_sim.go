package cli

import (
	"context"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpunode/gpunode/internal/platform"
)

// simControlOptions are the agent's fault-injection socket on simulated GPUs.
type simControlOptions struct {
	socket string
}

// defaultSimSocket is --sim-control-socket's default; {state-dir} stands for --state-dir.
const defaultSimSocket = "{state-dir}/sim.sock"

func (o *simControlOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.socket, "sim-control-socket", defaultSimSocket, "with --sim: unix socket serving 'gpunode sim inject NODE --socket PATH' (the fault-injection API of 'gpunode sim fleet') for this node's simulated GPUs; {state-dir} stands for --state-dir (\"\" to disable)")
}

// check refuses a socket given without simulated GPUs (simPreset is --sim).
func (o *simControlOptions) check(simPreset string) error {
	if simPreset == "" && o.socket != "" && o.socket != defaultSimSocket {
		return usageErrorf("--sim-control-socket %s: needs --sim (only simulated GPUs take injected faults)", o.socket)
	}
	return nil
}

// serve serves the control API of the simulated GPUs of backend on the socket until ctx
// ends or stop is called (stop waits for the server to close its socket). Without --sim
// there is nothing to serve; a socket that cannot be opened is logged and the agent runs
// on without it (fault injection is test tooling, not the node's health).
func (o *simControlOptions) serve(ctx context.Context, plat *platform.Platform, node, stateDir string, log *slog.Logger) (stop func()) {
	if o.socket == "" || !plat.Simulated() {
		return func() {}
	}
	path := strings.ReplaceAll(o.socket, "{state-dir}", stateDir)
	ctx, cancel := context.WithCancel(ctx)
	s, err := plat.ListenSimControl(ctx, path, node, log)
	if err != nil {
		cancel()
		log.Warn("simulated GPUs: no fault-injection socket", "err", err)
		return func() {}
	}
	log.Info("simulated GPUs: fault injection served", "socket", path, "node", node)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Serve(ctx); err != nil {
			log.Warn("simulated GPUs: the fault-injection socket stopped", "socket", path, "err", err)
		}
	}()
	return func() { cancel(); <-done }
}
