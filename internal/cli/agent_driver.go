package cli

import (
	"context"
	"log/slog"

	"github.com/gpunode/gpunode/internal/platform"
)

// openAgentPlatform is the agent's platform: its backend waits for the driver (an agent
// that starts before the driver, or whose driver is upgraded, waits; it never crash-loops)
// and is released while the GPU Operator pauses the node's GPU clients.
func (o *factOptions) openAgentPlatform(log *slog.Logger) (*platform.Platform, error) {
	opts := o.platformOptions()
	opts.WaitForDriver, opts.Log = true, log
	return o.gpu.openPlatform(opts)
}

// inDriverSessions runs run in each session of the driver: once the driver is open, until
// it is released (a pause, a driver that went away) and again when it is open again; the
// device and DRA plugins thus stop serving while the driver is away. An error that is not
// the session's end is returned, as it would be at start.
func inDriverSessions(d *platform.Driver, log *slog.Logger, what string, run func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		for {
			_, session, done, err := d.Session(ctx)
			if err != nil {
				return nil // ctx ended
			}
			log.Info("GPU driver open: starting", "what", what)
			err = run(session)
			ended := session.Err() != nil
			done()
			if ctx.Err() != nil {
				return nil
			}
			if !ended {
				return err
			}
			log.Info("GPU driver released: stopped", "what", what, "err", err)
		}
	}
}

// logDriverState logs each change of the driver's state (loaded, waiting and why, paused)
// until ctx ends: what status.stack.driver says, in the agent's log.
func logDriverState(ctx context.Context, d *platform.Driver, log *slog.Logger) {
	for {
		changed := d.Changed()
		s := d.State()
		log.Info("GPU driver state", "loaded", s.Loaded, "paused", s.Paused, "message", s.Message, "since", s.Since)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}
