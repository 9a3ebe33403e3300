package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
	"github.com/gpunode/gpunode/internal/remediation"
)

type explainOptions struct {
	cluster clusterFlags
	output  outputFlags
}

func newExplainCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Explain what gpunode decided about a cluster object, and why",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return usageErrorf("explain needs a subcommand: node") },
	}
	cmd.AddCommand(newExplainNodeCommand())
	return cmd
}

func newExplainNodeCommand() *cobra.Command {
	o := &explainOptions{}
	cmd := &cobra.Command{
		Use:   "node NAME",
		Short: "Why a GPU node is held, by whom, since when, and what happens next",
		Long: `Explain one GPU node: every owner's holds on its Node (oldest first), the fault its GPUs'
health shows, what remediation is doing about it (the step in flight, the evidence bundle with
its hash and path, the attempts so far), the DeviceTaintRules its holds own on a DRA node
(name, devices, effect, since), the fleet's budget and circuit breaker as they apply
to it, and what happens next and when.

It reads the GPUNode, its Node, the GPUNodePolicy that governs it (the built-in defaults
when none selects the Node) and the rest of the fleet (the budget counts every node's
holds), and decides as the remediation controller does, with the same code
(internal/remediation.Explain), at the current time: the account and the controller cannot
disagree. It says whether the node's agent is lost (no heartbeat for the policy's
agentLostAfter) as the acceptance controller decides it (acceptance.DecideAgent).

-o json (or --json) and -o yaml print the same explanation as one object.

Exit codes: 0 explained, 1 no such GPUNode (or it cannot be read), 2 bad usage.`,
		Example: `  gpunode explain node gpu-017
  gpunode explain node gpu-017 --json | jq .next
  gpunode explain node gpu-017 -o yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExplainNode(cmd.Context(), o, args[0], cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	o.cluster.add(fs)
	o.output.add(fs, "the explanation")
	return cmd
}

// nodeExplanation is remediation's explanation of one node plus what the API adds: the
// pool (or the built-in defaults), the agent's heartbeat, the phase the status shows and
// the evidence bundle's path and size.
type nodeExplanation struct {
	remediation.Explanation
	// GPUNode and NodeName name the objects; Pool is the governing GPUNodePolicy ("" none).
	GPUNode  string `json:"gpuNode"`
	NodeName string `json:"nodeName"`
	Pool     string `json:"pool,omitempty"`
	// StatusPhase is status.phase as the controllers last wrote it.
	StatusPhase v1alpha1.Phase `json:"statusPhase,omitempty"`
	// Bundle is the evidence bundle status.remediation records.
	Bundle *v1alpha1.EvidenceSummary `json:"evidenceBundle,omitempty"`
	// LastAcceptance is the node's latest acceptance run.
	LastAcceptance *v1alpha1.AcceptanceSummary `json:"lastAcceptance,omitempty"`
	// BuiltInDefaults: no GPUNodePolicy selects the Node, and the built-in defaults apply.
	BuiltInDefaults bool `json:"builtInDefaults,omitempty"`
	// Agent is the node agent's liveness, decided as the acceptance controller does.
	Agent agentExplanation `json:"agent"`
	// DeviceTaintRules are the DeviceTaintRules the node's holds own (DRA).
	DeviceTaintRules []deviceTaintExplanation `json:"deviceTaintRules,omitempty"`
	// At is the time the explanation was decided at.
	At time.Time `json:"at"`
}

func runExplainNode(ctx context.Context, o *explainOptions, name string, out io.Writer) error {
	format, err := o.output.format()
	if err != nil {
		return err
	}
	c, err := cliClient(&o.cluster)
	if err != nil {
		return err
	}
	e, err := explainNode(ctx, c, name, time.Now())
	if err != nil {
		return err
	}
	if format != formatText {
		return writeDocument(out, format, e)
	}
	_, err = io.WriteString(out, e.String())
	return err
}

// String renders the explanation for a person: remediation's account, then the pool, the
// agent's heartbeat, the status phase, the evidence bundle and the last acceptance.
func (e nodeExplanation) String() string {
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	s := e.Explanation.String()
	pool := e.Pool
	if e.BuiltInDefaults {
		pool = fmt.Sprintf("none: no GPUNodePolicy selects the Node, so the built-in defaults apply (acceptance as `gpunode accept` without --policy, remediation's defaults, agentLostAfter %s)", acceptance.DefaultAgentLostAfter)
	}
	s += fmt.Sprintf("pool: %s\n", pool)
	s += e.Agent.String()
	s += deviceTaintsText(e.DeviceTaintRules)
	if e.StatusPhase != "" {
		s += fmt.Sprintf("status phase: %s\n", e.StatusPhase)
	}
	if b := e.Bundle; b != nil {
		s += fmt.Sprintf("evidence bundle: %s (%d bytes, sha256 %s, created %s", b.Path, b.SizeBytes, b.SHA256, at(b.Created.Time))
		if b.Trigger != "" {
			s += ", trigger " + b.Trigger
		}
		s += ")\n"
	}
	if la := e.LastAcceptance; la != nil {
		s += fmt.Sprintf("last acceptance: generation %d %s at %s", la.Generation, la.Result, at(la.Time.Time))
		if la.RecordName != "" {
			s += " (AcceptanceRecord " + la.RecordName + ")"
		}
		s += "\n"
	}
	return s
}
