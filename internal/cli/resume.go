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
	ctrlremediation "github.com/gpunode/gpunode/internal/controller/remediation"
)

type resumeOptions struct {
	kubeconfig string
	reason     string
	force      bool
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
a resume then would do nothing.
--force sets the annotation anyway.

Exit codes: 0 resumed, 1 no such policy, breaker not tripped, or the write failed, 2 bad usage.`,
		Example: `  gpunode resume h100-fleet --reason "rack 12 PDU replaced, ticket OPS-981"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runResume(cmd.Context(), o, args[0], cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	fs.StringVar(&o.reason, "reason", "", "why it is safe to resume, for the Event and the people after you")
	fs.BoolVar(&o.force, "force", false, "set the resume annotation even when the breaker is not tripped")
	return cmd
}

func runResume(ctx context.Context, o *resumeOptions, name string, out io.Writer) error {
	if len(o.reason) > 1024 {
		return usageErrorf("--reason: %d characters, at most 1024", len(o.reason))
	}
	c, err := cliClient(o.kubeconfig)
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
	b := p.Status.Breaker
	if cur := ctrlremediation.Breaker(p); b != nil && cur.ResumedAt.After(cur.TrippedAt) {
		b = nil // tripped, and already resumed since
	}
	if b == nil && !o.force {
		return &exitError{code: ExitFail, err: fmt.Errorf("the circuit breaker of pool %q is not tripped: there is nothing to resume; --force sets the resume annotation anyway", name)}
	}
	now := time.Now().UTC()
	stamp, err := stampAnnotation(ctx, c, p, "GPUNodePolicy", v1alpha1.AnnotationResumeRemediation, now)
	if err != nil {
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
