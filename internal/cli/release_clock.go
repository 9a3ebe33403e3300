package cli

import (
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/internal/remediation"
)

// serverAhead is how far stamp lies past the API server's clock, as the server recorded
// the CLI's write in obj's managed fields (to the second); ok is false when it did not.
func serverAhead(obj client.Object, stamp time.Time) (ahead time.Duration, ok bool) {
	var latest time.Time
	for _, m := range obj.GetManagedFields() {
		if m.Manager == fieldManagerCLI && m.Time != nil && m.Time.After(latest) {
			latest = m.Time.Time
		}
	}
	if latest.IsZero() {
		return 0, false
	}
	return stamp.Sub(latest), true
}

// refusedForSkew is the error for a stamp the controller will refuse as stamped in the
// future (this machine's clock runs ahead of the cluster's), or nil.
func refusedForSkew(obj client.Object, kind, key string, stamp time.Time) error {
	ahead, ok := serverAhead(obj, stamp)
	// The server's time is to the second: allow that second on top of the skew.
	if !ok || ahead <= remediation.MaxStampSkew+time.Second {
		return nil
	}
	return &exitError{code: ExitFail, err: fmt.Errorf("%s %q: %s was set to %s, %s ahead of the API server's clock: "+
		"the remediation controller refuses a stamp more than %s in the future (Event %s) and the request counts as never made; "+
		"set this machine's clock right and run the command again",
		kind, obj.GetName(), key, stamp.Format(time.RFC3339Nano), ahead.Round(time.Second), remediation.MaxStampSkew, "RequestRefused")}
}
