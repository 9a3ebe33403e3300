package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/buildinfo"
)

type versionOptions struct {
	output outputFlags
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
	o.output.add(cmd.Flags(), "the version, commit, Go version and platform")
	return cmd
}

func runVersion(_ context.Context, o *versionOptions, out io.Writer) error {
	format, err := o.output.format()
	if err != nil {
		return err
	}
	i := buildinfo.Get()
	if format != formatText {
		return writeDocument(out, format, i)
	}
	_, err = io.WriteString(out, versionLine(i))
	return err
}

// versionLine is the one line `gpunode version` and `gpunode --version` print.
func versionLine(i buildinfo.Info) string {
	commit := i.Commit
	if commit == "" {
		commit = "unknown"
	}
	if i.Modified {
		commit += "-dirty"
	}
	return fmt.Sprintf("gpunode %s (commit %s, %s, %s)\n", i.Version, commit, i.GoVersion, i.Platform)
}
