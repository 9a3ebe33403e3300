package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// stampAnnotation sets annotation key of obj (of kind) to now, RFC 3339 with nanoseconds
// (a controller acts on a request later than the state it ends, which may be within the
// same second), with a merge patch, and returns the value written.
func stampAnnotation(ctx context.Context, c client.Client, obj client.Object, kind, key string, now time.Time) (string, error) {
	stamp := now.Format(time.RFC3339Nano)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: stamp}}})
	if err != nil {
		return "", fmt.Errorf("encoding %s for %s %q: %w", key, kind, obj.GetName(), err)
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(fieldManagerCLI)); err != nil {
		return "", fmt.Errorf("setting %s on %s %q: %w", key, kind, obj.GetName(), err)
	}
	return stamp, nil
}

// recordCLIEvent records what a person asked through the CLI, and who asked, in an Event
// on obj (of kind, in gpunode.dev/v1alpha1).
func recordCLIEvent(ctx context.Context, c client.Client, obj client.Object, kind, action, reason, note string, now time.Time) error {
	host, _ := os.Hostname()
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: fmt.Sprintf("%s.%x", obj.GetName(), now.UnixNano())},
		EventTime:  metav1.NewMicroTime(now), ReportingController: "gpunode.dev/cli", ReportingInstance: clip(fieldManagerCLI+"@"+host, 128),
		Action: action, Reason: reason, Type: corev1.EventTypeNormal, Note: clip(note, 1024),
		Regarding: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: kind, Name: obj.GetName(), UID: obj.GetUID()},
	}
	if err := c.Create(ctx, ev); err != nil {
		return fmt.Errorf("creating the %s Event of %s %q: %w", action, kind, obj.GetName(), err)
	}
	return nil
}

// withReason is note followed by ": reason" when a reason was given.
func withReason(note, reason string) string {
	if reason == "" {
		return note
	}
	return note + ": " + reason
}
