package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// campaignBackoff is the wait before a new manager campaigns for the Lease again.
const campaignBackoff = 2 * time.Second

// runManagers runs the manager build makes until ctx ends. With leader election, a manager
// that lost its Lease (an API server outage longer than the renew deadline does that) is
// replaced by a new one that campaigns again, in this process: exiting would leave the
// fleet unwatched through a crash-loop backoff after the API server is back (a node with a
// lost GPU stayed unheld for 100 s that way). What the controllers decide comes from the
// objects, so the new manager resumes every decision. A new manager that cannot be set up
// yet (the API server still away) is tried again; any other failure ends the process, as
// does a first manager that cannot be set up (a wrong kubeconfig must not loop).
func runManagers(ctx context.Context, leaderElect bool, log *slog.Logger, build func(first bool) (manager.Manager, error)) error {
	for first := true; ; first = false {
		mgr, err := build(first)
		if err != nil && first {
			return err
		}
		if err != nil { // the API server may still be away: setting up reads its API groups
			log.Warn("the controller's new manager could not be set up; trying again", "err", err, "after", campaignBackoff)
			if !sleepCtx(ctx, campaignBackoff) {
				return nil
			}
			continue
		}
		err = mgr.Start(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			return nil
		case !leaderElect || !leadershipLost(err):
			return fmt.Errorf("running the controller: %w", err)
		}
		log.Warn("the controller lost its leader Lease; campaigning again", "err", err, "after", campaignBackoff)
		if !sleepCtx(ctx, campaignBackoff) {
			return nil
		}
	}
}

// sleepCtx waits d, or until ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// leadershipLost reports whether the manager stopped because its Lease was lost:
// controller-runtime says so only in the error's text.
func leadershipLost(err error) bool {
	return strings.Contains(err.Error(), "leader election lost")
}
