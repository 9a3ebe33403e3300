package cli

import (
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpunode/gpunode/internal/simfleet"
)

//go:generate go run ../../hack/cli-reference ../../docs/cli.md

// WriteReference writes the command reference (docs/cli.md) in Markdown: every command of
// the tree, its help, usage, flags and examples, as `gpunode COMMAND --help` prints them.
func WriteReference(w io.Writer) error {
	var b strings.Builder
	if err := writeReference(&b); err != nil {
		return err
	}
	// A default computed on this machine is shown as the rule that computes it.
	_, err := io.WriteString(w, strings.ReplaceAll(b.String(), simfleet.DefaultStateDir(), "$TMPDIR/gpunode-sim-$UID"))
	return err
}

func writeReference(w io.Writer) error {
	root := NewRootCommand()
	ew := &errWriter{w: w}
	ew.printf("# Command reference\n\n")
	ew.printf("Generated from the commands (`go generate ./internal/cli/`); `gpunode COMMAND --help` prints the same.\n\n")
	var all []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		all = append(all, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, c := range all {
		if c == root {
			continue
		}
		ew.printf("- [`%s`](#%s): %s\n", c.CommandPath(), anchor(c.CommandPath()), c.Short)
	}
	ew.printf("\n")
	for _, c := range all {
		writeCommand(ew, c)
	}
	return ew.err
}

func writeCommand(w *errWriter, c *cobra.Command) {
	w.printf("## %s\n\n%s\n\n", c.CommandPath(), c.Short)
	if long := strings.TrimSpace(c.Long); long != "" {
		w.printf("```text\n%s\n```\n\n", long)
	}
	if c.Runnable() {
		w.printf("Usage: `%s`\n\n", c.UseLine())
	}
	if ex := strings.TrimRight(c.Example, "\n "); ex != "" {
		w.printf("Examples:\n\n```sh\n%s\n```\n\n", ex)
	}
	if flags := flagUsages(c.NonInheritedFlags()); flags != "" {
		w.printf("Flags:\n\n```text\n%s```\n\n", flags)
	}
	if c.HasSubCommands() {
		w.printf("Commands:\n\n")
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			w.printf("- [`%s`](#%s): %s\n", sub.CommandPath(), anchor(sub.CommandPath()), sub.Short)
		}
		w.printf("\n")
	}
}

// flagUsages is pflag's flag table without the help flag every command has.
func flagUsages(fs *pflag.FlagSet) string {
	out := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !f.Hidden {
			out.AddFlag(f)
		}
	})
	return out.FlagUsagesWrapped(100)
}

// anchor is the Markdown heading anchor of a command path.
func anchor(path string) string {
	return strings.ReplaceAll(strings.ToLower(path), " ", "-")
}
