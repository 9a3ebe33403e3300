package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
	ctrlremediation "github.com/gpunode/gpunode/internal/controller/remediation"
	"github.com/gpunode/gpunode/internal/remediation"
)

// fieldManagerCLI is the field manager of the CLI's writes.
const fieldManagerCLI = "gpunode-cli"

type releaseOptions struct {
	kubeconfig string
	reason     string
	force      bool
}

func newReleaseCommand() *cobra.Command {
	o := &releaseOptions{}
	cmd := &cobra.Command{
		Use:   "release NODE",
		Short: "Release a GPU node from Maintenance once a person has serviced it",
		Long: `Release a GPU node from Maintenance, the end of the recovery ladder where the controller
leaves a node whose fault no step cleared. It sets the GPUNode annotation ` + v1alpha1.AnnotationRelease + `
to the current time (RFC 3339); the remediation controller then asks the node's agent for an
acceptance run: a passing run returns the node to service and lifts remediation's hold, a
failing one (or none within the acceptance timeout) sends it back to Maintenance. The
attempts counted against the ladder's limits start afresh. --reason is recorded in an Event
on the GPUNode.

A node that is not in Maintenance is refused (exit 1, saying where it is): releasing it would
do nothing now, and a stale request could end a later Maintenance unseen. --force sets the
annotation anyway.

Exit codes: 0 released, 1 no such GPUNode, not in Maintenance, or the write failed, 2 bad usage.`,
		Example: `  gpunode release gpu-017 --reason "GPU 3 reseated, ticket OPS-1234"
  gpunode explain node gpu-017   # follow the acceptance run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRelease(cmd.Context(), o, args[0], cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	fs.StringVar(&o.reason, "reason", "", "what was done to the node, for the Event and the people after you")
	fs.BoolVar(&o.force, "force", false, "set the release annotation even when the node is not in Maintenance")
	return cmd
}

func runRelease(ctx context.Context, o *releaseOptions, name string, out io.Writer) error {
	if len(o.reason) > 1024 {
		return usageErrorf("--reason: %d characters, at most 1024", len(o.reason))
	}
	c, err := cliClient(o.kubeconfig)
	if err != nil {
		return err
	}
	gn, err := readGPUNode(ctx, c, name)
	if err != nil {
		return err
	}
	state, err := ctrlremediation.ReadState(gn)
	if err != nil && !o.force {
		return fmt.Errorf("%w; --force sets the release annotation anyway", err)
	}
	if state.Phase != remediation.PhaseMaintenance && !o.force {
		where := "remediation has no claim on it"
		if state.Phase != "" {
			where = "remediation has it in " + string(state.Phase)
		}
		return &exitError{code: ExitFail, err: fmt.Errorf("GPUNode %q is not in Maintenance (%s; status phase %q): there is nothing to release. "+
			"'gpunode explain node %s' says what holds it; --force sets the release annotation anyway", name, where, orNone(string(gn.Status.Phase)), name)}
	}
	now := time.Now().UTC()
	// Nanoseconds: the controller acts on a release later than the Maintenance began,
	// which may be within the same second.
	stamp := now.Format(time.RFC3339Nano)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.AnnotationRelease: stamp}}})
	if err != nil {
		return fmt.Errorf("encoding the release of GPUNode %q: %w", name, err)
	}
	if err := c.Patch(ctx, gn, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(fieldManagerCLI)); err != nil {
		return fmt.Errorf("setting %s on GPUNode %q: %w", v1alpha1.AnnotationRelease, name, err)
	}
	eventErr := recordRelease(ctx, c, gn, o.reason, now)
	timeout := acceptanceTimeout(ctx, c, gn)
	_, _ = fmt.Fprintf(out, "GPUNode %s: release requested at %s (annotation %s)\n", name, stamp, v1alpha1.AnnotationRelease)
	if o.reason != "" {
		_, _ = fmt.Fprintf(out, "reason: %s\n", o.reason)
	}
	if state.Phase != remediation.PhaseMaintenance {
		_, _ = fmt.Fprintf(out, "forced: the node is not in Maintenance (remediation phase %q); the controller acts on the request only once it is, if the request is newer than the Maintenance\n", state.Phase)
	}
	_, _ = fmt.Fprintf(out, "next: the remediation controller asks the agent on %s for an acceptance run; a passing run returns the node to service and lifts remediation's hold, "+
		"a failing run, or none within %s, sends it back to Maintenance\n", gn.Spec.NodeName, timeout)
	_, _ = fmt.Fprintf(out, "follow it: gpunode explain node %s\n", name)
	if eventErr != nil {
		_, _ = fmt.Fprintf(out, "note: the release is requested, but its Event could not be recorded: %v\n", eventErr)
	}
	return nil
}

// acceptanceTimeout is how long the node's pool waits for the acceptance run after a
// release (remediation's default when the pool cannot be read).
func acceptanceTimeout(ctx context.Context, c client.Client, gn *v1alpha1.GPUNode) time.Duration {
	def := remediation.DefaultPolicy().AcceptanceTimeout
	var nd corev1.Node
	var policies v1alpha1.GPUNodePolicyList
	if c.Get(ctx, client.ObjectKey{Name: gn.Spec.NodeName}, &nd) != nil || c.List(ctx, &policies) != nil {
		return def
	}
	p, _ := acceptance.SelectPolicy(nd.Labels, policies.Items)
	if p == nil {
		return def
	}
	rp, err := ctrlremediation.Policy(p.Name, p.Spec.Remediation)
	if err != nil {
		return def
	}
	return rp.WithDefaults().AcceptanceTimeout
}

// recordRelease records the release, with its reason and who asked, in an Event on gn.
func recordRelease(ctx context.Context, c client.Client, gn *v1alpha1.GPUNode, reason string, now time.Time) error {
	host, _ := os.Hostname()
	note := "released from Maintenance by gpunode release"
	if reason != "" {
		note += ": " + reason
	}
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: fmt.Sprintf("%s.%x", gn.Name, now.UnixNano())},
		EventTime:  metav1.NewMicroTime(now), ReportingController: "gpunode.dev/cli", ReportingInstance: clip(fieldManagerCLI+"@"+host, 128),
		Action: "Release", Reason: "ReleaseRequested", Type: corev1.EventTypeNormal, Note: clip(note, 1024),
		Regarding: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "GPUNode", Name: gn.Name, UID: gn.UID},
	}
	if err := c.Create(ctx, ev); err != nil {
		return fmt.Errorf("creating the Event of the release of GPUNode %q: %w", gn.Name, err)
	}
	return nil
}

// clip shortens s to at most n bytes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
