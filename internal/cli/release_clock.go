package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
// future (this machine's clock runs ahead of the cluster's), or nil. The stamp is then
// withdrawn (the annotation set back to previous, removed when ""): left in place it would
// become valid once the cluster's clock caught up, a release or resume nobody asked for then.
func refusedForSkew(ctx context.Context, c client.Client, obj client.Object, kind, key, previous string, stamp time.Time) error {
	ahead, ok := serverAhead(obj, stamp)
	// The server's time is to the second: allow that second on top of the skew.
	if !ok || ahead <= remediation.MaxStampSkew+time.Second {
		return nil
	}
	withdrawn := "it was withdrawn"
	if err := restoreAnnotation(ctx, c, obj, key, previous); err != nil {
		withdrawn = fmt.Sprintf("withdrawing it failed (%v): remove it by hand", err)
	}
	return &exitError{code: ExitFail, err: fmt.Errorf("%s %q: %s was set to %s, %s ahead of the API server's clock: "+
		"the remediation controller refuses a stamp more than %s in the future (Event %s), so %s; "+
		"set this machine's clock right and run the command again",
		kind, obj.GetName(), key, stamp.Format(time.RFC3339Nano), ahead.Round(time.Second), remediation.MaxStampSkew, "RequestRefused", withdrawn)}
}

// restoreAnnotation sets annotation key of obj back to previous (removes it when "").
func restoreAnnotation(ctx context.Context, c client.Client, obj client.Object, key, previous string) error {
	var v any
	if previous != "" {
		v = previous
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	if err != nil {
		return fmt.Errorf("encoding %s: %w", key, err)
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(fieldManagerCLI)); err != nil {
		return fmt.Errorf("restoring %s: %w", key, err)
	}
	return nil
}
