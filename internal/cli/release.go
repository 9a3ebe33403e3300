package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	cluster clusterFlags
	reason  string
	force   bool
	// now is the clock of the stamp (time.Now when nil).
	now func() time.Time
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

The stamp is this machine's clock. The controller acts only on a release later than the
Maintenance, and refuses one stamped more than 5 minutes past its own clock (a Warning Event
RequestRefused on the GPUNode): a clock behind the Maintenance is refused before the write,
one ahead of the API server's by more than that is withdrawn after it, both with exit 1.

Exit codes: 0 released, 1 no such GPUNode, not in Maintenance, a clock the controller would
not accept, or the write failed, 2 bad usage.`,
		Example: `  gpunode release gpu-017 --reason "GPU 3 reseated, ticket OPS-1234"
  gpunode explain node gpu-017   # follow the acceptance run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRelease(cmd.Context(), o, args[0], cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	o.cluster.add(fs)
	fs.StringVar(&o.reason, "reason", "", "what was done to the node, for the Event and the people after you")
	fs.BoolVar(&o.force, "force", false, "set the release annotation even when the node is not in Maintenance")
	return cmd
}

func runRelease(ctx context.Context, o *releaseOptions, name string, out io.Writer) error {
	if len(o.reason) > 1024 {
		return usageErrorf("--reason: %d characters, at most 1024", len(o.reason))
	}
	c, err := cliClient(&o.cluster)
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
	now := clockOf(o.now)
	if state.Phase == remediation.PhaseMaintenance && !now.After(state.PhaseSince) {
		return &exitError{code: ExitFail, err: fmt.Errorf("GPUNode %q entered Maintenance at %s, not before this machine's clock (%s): "+
			"the controller acts only on a release later than the Maintenance, so this one would be ignored; set this machine's clock right and run the command again",
			name, state.PhaseSince.UTC().Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))}
	}
	previous := gn.GetAnnotations()[v1alpha1.AnnotationRelease]
	stamp, err := stampAnnotation(ctx, c, gn, "GPUNode", v1alpha1.AnnotationRelease, now)
	if err != nil {
		return err
	}
	if err := refusedForSkew(ctx, c, gn, "GPUNode", v1alpha1.AnnotationRelease, previous, now); err != nil {
		return err
	}
	eventErr := recordCLIEvent(ctx, c, gn, "GPUNode", "Release", "ReleaseRequested", withReason("released from Maintenance by gpunode release", o.reason), now)
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

// clockOf is now by clock (time.Now when nil), in UTC.
func clockOf(clock func() time.Time) time.Time {
	if clock == nil {
		return time.Now().UTC()
	}
	return clock().UTC()
}

// clip shortens s to at most n bytes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
