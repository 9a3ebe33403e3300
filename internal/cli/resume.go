package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/remediation"
)

type resumeOptions struct {
	cluster clusterFlags
	reason  string
	force   bool
	// now is the clock of the stamp (time.Now when nil).
	now func() time.Time
}

func newResumeCommand() *cobra.Command {
	o := &resumeOptions{}
	cmd := &cobra.Command{
		Use:   "resume POLICY",
		Short: "Resume remediation in a pool whose circuit breaker tripped",
		Long: `Resume automatic remediation in the pool of a GPUNodePolicy after its circuit breaker
tripped (too many of the pool's nodes reported new faults within the breaker's window; see
'kubectl get gpunodepolicy POLICY -o yaml': status.breaker and the RemediationPaused
condition). It sets the policy's annotation ` + v1alpha1.AnnotationResumeRemediation + ` to the
current time (RFC 3339); the remediation controller then closes the breaker and takes the
waiting nodes in turn, within the pool's budget. Faults reported before the resume do not
trip it again. --reason is recorded in an Event on the policy.

A pool whose breaker is not tripped, or was resumed since it tripped, is refused (exit 1):
a resume then would do nothing. A resume annotation the controller refuses (not RFC 3339, or
stamped more than 5 minutes past its clock) counts as none. --force sets the annotation anyway.

The stamp is this machine's clock: a clock behind the trip is refused before the write, one
ahead of the API server's by more than 5 minutes (the controller would refuse the stamp with a
Warning Event RequestRefused) is withdrawn after it, both with exit 1.

Exit codes: 0 resumed, 1 no such policy, breaker not tripped, a clock the controller would not
accept, or the write failed, 2 bad usage.`,
		Example: `  gpunode resume h100-fleet --reason "rack 12 PDU replaced, ticket OPS-981"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runResume(cmd.Context(), o, args[0], cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	o.cluster.add(fs)
	fs.StringVar(&o.reason, "reason", "", "why it is safe to resume, for the Event and the people after you")
	fs.BoolVar(&o.force, "force", false, "set the resume annotation even when the breaker is not tripped")
	return cmd
}

func runResume(ctx context.Context, o *resumeOptions, name string, out io.Writer) error {
	if len(o.reason) > 1024 {
		return usageErrorf("--reason: %d characters, at most 1024", len(o.reason))
	}
	c, err := cliClient(&o.cluster)
	if err != nil {
		return err
	}
	p := &v1alpha1.GPUNodePolicy{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return &exitError{code: ExitFail, err: fmt.Errorf("no GPUNodePolicy %q ('kubectl get gpunodepolicies' lists them)", name)}
		}
		return fmt.Errorf("reading GPUNodePolicy %q: %w", name, err)
	}
	now := clockOf(o.now)
	b := p.Status.Breaker
	// A resume the controller refuses (malformed, or stamped in the future) counts as none.
	if resumed, err := remediation.ParseStamp(p.Annotations[v1alpha1.AnnotationResumeRemediation], now); err == nil && b != nil && resumed.After(b.TrippedAt.Time) {
		b = nil // tripped, and already resumed since
	}
	if b == nil && !o.force {
		return &exitError{code: ExitFail, err: fmt.Errorf("the circuit breaker of pool %q is not tripped: there is nothing to resume; --force sets the resume annotation anyway", name)}
	}
	if b != nil && !now.After(b.TrippedAt.Time) {
		return &exitError{code: ExitFail, err: fmt.Errorf("the circuit breaker of pool %q tripped at %s, not before this machine's clock (%s): "+
			"the controller closes it only for a resume later than the trip, so this one would be ignored; set this machine's clock right and run the command again",
			name, b.TrippedAt.UTC().Format(time.RFC3339), now.Format(time.RFC3339Nano))}
	}
	previous := p.GetAnnotations()[v1alpha1.AnnotationResumeRemediation]
	stamp, err := stampAnnotation(ctx, c, p, "GPUNodePolicy", v1alpha1.AnnotationResumeRemediation, now)
	if err != nil {
		return err
	}
	if err := refusedForSkew(ctx, c, p, "GPUNodePolicy", v1alpha1.AnnotationResumeRemediation, previous, now); err != nil {
		return err
	}
	eventErr := recordCLIEvent(ctx, c, p, "GPUNodePolicy", "Resume", "ResumeRequested", withReason("remediation resumed by gpunode resume", o.reason), now)
	_, _ = fmt.Fprintf(out, "GPUNodePolicy %s: remediation resumed at %s (annotation %s)\n", name, stamp, v1alpha1.AnnotationResumeRemediation)
	if b != nil {
		_, _ = fmt.Fprintf(out, "the breaker tripped at %s: %s (%d of %d nodes faulting)\n", b.TrippedAt.UTC().Format(time.RFC3339), b.Reason, b.Faulting, b.Nodes)
	} else {
		_, _ = fmt.Fprintln(out, "forced: the breaker was not tripped; a trip before this time is closed by the request")
	}
	if o.reason != "" {
		_, _ = fmt.Fprintf(out, "reason: %s\n", o.reason)
	}
	_, _ = fmt.Fprintln(out, "next: the remediation controller closes the breaker and takes the pool's waiting nodes in turn, within its budget")
	if eventErr != nil {
		_, _ = fmt.Fprintf(out, "note: the resume is requested, but its Event could not be recorded: %v\n", eventErr)
	}
	return nil
}
