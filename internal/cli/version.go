package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/buildinfo"
)

type versionOptions struct {
	json bool
}

func newVersionCommand() *cobra.Command {
	o := &versionOptions{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print gpunode's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runVersion(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func runVersion(_ context.Context, o *versionOptions, out io.Writer) error {
	i := buildinfo.Get()
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(i)
	}
	commit := i.Commit
	if commit == "" {
		commit = "unknown"
	}
	if i.Modified {
		commit += "-dirty"
	}
	_, err := fmt.Fprintf(out, "gpunode %s (commit %s, %s, %s)\n", i.Version, commit, i.GoVersion, i.Platform)
	return err
}
