package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/evidence"
)

func newEvidenceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "evidence",
		Short: "Work with the evidence bundles the agent writes before a recovery step",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newEvidenceVerifyCommand())
	return cmd
}

type evidenceVerifyOptions struct {
	output outputFlags
}

func newEvidenceVerifyCommand() *cobra.Command {
	o := &evidenceVerifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify BUNDLE...",
		Short: "Check evidence bundles against their names and manifests",
		Long: `Check each evidence bundle (evidence-NODE-TIME-SHA256.tar.gz, docs/evidence.md) as the
agent wrote it: the archive's sha256 against its name, the manifest against its schema, and
every file's size and sha256 against the manifest, with nothing missing and nothing extra.
A bundle copied off a node can be trusted when it verifies.

Exit codes: 0 every bundle verified, 1 a bundle is corrupt or unreadable, 2 a path that is
not a bundle (its name is not a bundle name, or it does not exist).`,
		Example: `  gpunode evidence verify /var/lib/gpunode/evidence/evidence-gpu-node-07-20261129T180003Z-*.tar.gz
  gpunode evidence verify --json bundle.tar.gz | jq .[0].counts`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEvidenceVerify(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	o.output.add(cmd.Flags(), "the summary of each verified bundle, as a list")
	return cmd
}

func runEvidenceVerify(ctx context.Context, o *evidenceVerifyOptions, paths []string, out io.Writer) error {
	format, err := o.output.format()
	if err != nil {
		return err
	}
	for _, p := range paths {
		if _, _, _, err := evidence.ParseName(filepath.Base(p)); err != nil {
			return usageErrorf("%s: not an evidence bundle: %w", p, err)
		}
		if _, err := os.Stat(p); err != nil {
			return usageError(err)
		}
	}
	w := &errWriter{w: out}
	var sums []evidence.Summary
	failed := false
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("verify %s: %w", p, err)
		}
		sum, err := evidence.Verify(p)
		switch {
		case errors.Is(err, evidence.ErrCorrupt):
			failed = true
			w.printf("CORRUPT  %s\n", err)
			continue
		case err != nil:
			failed = true
			w.printf("UNREADABLE  %s\n", err)
			continue
		}
		sums = append(sums, sum)
		if format == formatText {
			w.printf("OK  %s  node %s, trigger %s: %d kernel records, %d snapshots, %d findings, %d pods\n",
				sum.Name, sum.Node, triggerOf(sum), sum.Counts.KernelRecords, sum.Counts.Snapshots, sum.Counts.Findings, sum.Counts.Pods)
		}
	}
	if format != formatText {
		if sums == nil {
			sums = []evidence.Summary{}
		}
		if err := writeDocument(out, format, sums); err != nil {
			return err
		}
	}
	if w.err != nil {
		return w.err
	}
	if failed {
		return silentFailure
	}
	return nil
}

func triggerOf(s evidence.Summary) string {
	if s.TriggerGPU == "" {
		return s.Trigger + " (node)"
	}
	return s.Trigger + " on " + s.TriggerGPU
}
