// Package cli holds gpunode's commands, one file each. Output goes through the command's
// writers so every command can be tested.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/buildinfo"
)

// NewRootCommand builds the gpunode command tree.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "gpunode",
		Short: "Take GPU nodes from joined-the-cluster to ready-for-production-AI, and prove it",
		Long: `gpunode inventories a GPU node, accepts it layer by layer against a policy and
writes an acceptance record (JSON and Markdown) that says what was checked and what was found.

On a GPU node it talks to the NVIDIA driver (NVML); anywhere else, --sim runs the same
commands on simulated GPUs (presets a100x8, h100x8, h200x8, b200x8, h200x1, or a scenario file).

Every command takes --log-level (debug, info, warn, error) and --log-format (text, json)
for its logs on stderr; each line names the part it comes from (logger=agent.monitor).

Exit codes: 0 ok/passed, 1 failed, 2 bad usage or bad input.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.Version = strings.TrimSuffix(versionLine(buildinfo.Get()), "\n")
	root.SetVersionTemplate("{{.Version}}\n") // the same line as `gpunode version`
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	logs := &logOptions{}
	logs.addFlags(root.PersistentFlags())
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		l, err := logs.logger(cmd, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		slog.SetDefault(l)
		return nil
	}
	root.AddCommand(newVersionCommand(), newInventoryCommand(), newAcceptCommand(), newDoctorCommand(), newMonitorCommand(), newXIDCommand(), newExporterCommand(), newControllerCommand(), newAgentCommand(), newStressCommand())
	root.AddCommand(newExplainCommand())
	root.AddCommand(newReleaseCommand())
	root.AddCommand(newResumeCommand())
	root.AddCommand(newSimCommand())
	root.AddCommand(newEvidenceCommand())
	return root
}

// Execute runs gpunode with args and returns the process exit code.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	err := root.ExecuteContext(ctx)
	if err != nil && !errors.Is(err, silentFailure) {
		code := exitCode(err)
		var ee *exitError
		if !errors.As(err, &ee) && isCobraUsage(err) {
			code = ExitUsage
		}
		if ee == nil || ee.err != nil {
			_, _ = fmt.Fprintf(stderr, "gpunode: %v\n", err)
		}
		if code == ExitUsage {
			_, _ = fmt.Fprintln(stderr, "Run 'gpunode --help' for usage.")
		}
		return code
	}
	return exitCode(err)
}

// isCobraUsage recognises cobra's own argument errors (unknown command, wrong arg count).
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "accepts ", "requires ", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// notice tells a person at a terminal (errOut) what a long command is doing before it has
// anything to print: one line at once, so a quiet command does not look hung. Piped or
// redirected output gets nothing.
func notice(errOut io.Writer, format string, args ...any) {
	if isTerminal(errOut) {
		_, _ = fmt.Fprintf(errOut, format+"\n", args...)
	}
}

// isTerminal reports whether w is a terminal (progress display) rather than a pipe or file.
// Tests replace it to see what a terminal would get.
var isTerminal = fileIsTerminal

// fileIsTerminal reports whether w is a character device.
func fileIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
