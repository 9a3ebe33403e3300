package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/xid"
)

type xidExplainOptions struct {
	output outputFlags
}

func newXIDExplainCommand() *cobra.Command {
	o := &xidExplainOptions{}
	cmd := &cobra.Command{
		Use:   "explain CODE",
		Short: "Show an XID's catalog row and what gpunode does about it",
		Long: `explain prints NVIDIA's catalog row for an XID (mnemonic, description, the GPUs it applies
to, the immediate and investigatory actions, since when it also raises XID 154) and gpunode's
verdict: component, severity, action, why, and the decoding and correlation rules that can
change it. An XID not in the catalog gets gpunode's conservative default (a warning for a
person, no automatic action).

Exit codes: 0 explained, 2 CODE is not a number.`,
		Example: `  gpunode xid explain 48
  gpunode xid explain 74 --json | jq .rules`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runXIDExplain(cmd.Context(), o, args[0], cmd.OutOrStdout())
		},
	}
	o.output.add(cmd.Flags(), "the catalog entry and the rules that can change it")
	return cmd
}

// xidExplanation is the JSON form of `gpunode xid explain`.
type xidExplanation struct {
	xid.Entry
	Rules []xid.Rule `json:"rules"`
}

func runXIDExplain(_ context.Context, o *xidExplainOptions, arg string, out io.Writer) error {
	code, err := strconv.Atoi(strings.TrimSpace(arg))
	if err != nil || code < 0 {
		return usageErrorf("XID %q: want a non-negative number, such as 79", arg)
	}
	format, err := o.output.format()
	if err != nil {
		return err
	}
	e, _ := xid.Lookup(code)
	rules := xid.RulesFor(code, xid.Options{})
	if format != formatText {
		if rules == nil {
			rules = []xid.Rule{}
		}
		return writeDocument(out, format, xidExplanation{Entry: e, Rules: rules})
	}
	var b strings.Builder
	if e.Known {
		fmt.Fprintf(&b, "XID %d  %s\n  %s\n\nNVIDIA's catalog\n", e.XID, e.Mnemonic, e.Description)
		fmt.Fprintf(&b, "  applies to:           %s\n", appliesText(e.Applies))
		fmt.Fprintf(&b, "  immediate action:     %s (%s)\n", orNone(e.Bucket), xid.BucketMeaning(e.Bucket))
		fmt.Fprintf(&b, "  investigatory action: %s\n", orNone(e.Investigatory))
		fmt.Fprintf(&b, "  also raises XID 154:  %s\n", orNone(e.Raises154Since))
	} else {
		fmt.Fprintf(&b, "XID %d is not in gpunode's catalog.\n", code)
	}
	fmt.Fprintf(&b, "\nWhat gpunode does\n  component: %s\n  severity:  %s\n  action:    %s\n", e.Component, e.Severity, e.Action)
	if e.Note != "" {
		fmt.Fprintf(&b, "  why:       %s\n", e.Note)
	}
	if len(rules) > 0 {
		b.WriteString("\nRules that can change it\n")
		for _, r := range rules {
			fmt.Fprintf(&b, "  %s: %s\n", r.Name, r.Text)
		}
	}
	_, err = io.WriteString(out, b.String())
	return err
}

func appliesText(a xid.Applies) string {
	var on []string
	for _, g := range []struct {
		name string
		ok   bool
	}{{"A100", a.A100}, {"H100", a.H100}, {"B100", a.B100}, {"GB200", a.GB200}} {
		if g.ok {
			on = append(on, g.name)
		}
	}
	if len(on) == 0 {
		return "none (unused on current GPUs)"
	}
	return strings.Join(on, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
