package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/xid"
)

type xidDecodeOptions struct {
	output outputFlags
}

func newXIDDecodeCommand() *cobra.Command {
	o := &xidDecodeOptions{}
	cmd := &cobra.Command{
		Use:   "decode [FILE|-]",
		Short: "Print every XID event in kernel-log text with what it means",
		Long: `decode reads kernel-log text (a file, or standard input when FILE is - or absent) and
prints every XID event in it: the device, the MIG instance, the process, the catalog name and
gpunode's verdict (component, severity, action), after correlation (a 45 that follows another
XID on the same GPU is its consequence; 48 with 63/64 means drain, then reset; a 13 or 31
repeated by another process escalates to diagnostics). NVSwitch SXids are printed too.

Lines that are not the driver's XID reports produce nothing. A "fallen off the bus" message
without an Xid prefix is XID 79 (marked derived). With --json, one JSON object per line:
xid, pciBusID (as sysfs writes it, 0000:3b:00.0), gpuInstance and computeInstance (null when
absent), pid (null when unknown), process, message, mnemonic, component, severity, action,
consequence, and uuid when the driver's own "GPU at PCI:..." line named the GPU.

Exit codes: 0 decoded (whatever was found), 2 the file cannot be read.`,
		Example: `  # the running kernel's log
  dmesg | gpunode xid decode
  journalctl -k -b -1 | gpunode xid decode      # the previous boot

  # a saved log, one JSON object per event
  gpunode xid decode /var/log/kern.log --json | jq 'select(.severity != "info")'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "-"
			if len(args) == 1 {
				path = args[0]
			}
			return runXIDDecode(cmd.Context(), o, path, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.output.add(cmd.Flags(), "one item per event (a JSON line, or a YAML document)")
	return cmd
}

func runXIDDecode(ctx context.Context, o *xidDecodeOptions, path string, stdin io.Reader, out, errOut io.Writer) error {
	format, err := o.output.format()
	if err != nil {
		return err
	}
	in, name, closeFn, err := openInput(path, stdin)
	if err != nil {
		return err
	}
	defer closeFn()
	if path == "-" {
		notice(errOut, "reading a kernel log from standard input (pipe one in: `dmesg | gpunode xid decode`, or end with Ctrl-D)...")
	}
	scan, err := xid.ScanAll(ctx, in, name)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return usageError(fmt.Errorf("cannot read %w", err)) // ScanAll's error names the input
	}
	// What was left out goes to standard error: standard output stays the events alone.
	if scan.Long > 0 {
		fmt.Fprintf(errOut, "note: %s of %s skipped: longer than %d KiB, not kernel records\n", countOf(scan.Long, "line"), name, xid.MaxLineBytes>>10)
	}
	if scan.Repeats > 0 {
		fmt.Fprintf(errOut, "note: %s past the first %d not listed: repeats of a fault (code and device) already listed\n", countOf(scan.Repeats, "event"), xid.MaxEvents)
	}
	decoded := xid.Decode(scan.Events, xid.Options{})
	if format != formatText {
		for _, d := range decoded {
			if err := writeStreamItem(out, format, d.Record()); err != nil {
				return err
			}
		}
		return nil
	}
	return printXIDTable(out, name, decoded)
}

// openInput opens FILE, or standard input for "-".
func openInput(path string, stdin io.Reader) (io.Reader, string, func(), error) {
	if path == "-" {
		return stdin, "standard input", func() {}, nil
	}
	f, err := os.Open(path)
	if err == nil {
		var st os.FileInfo
		if st, err = f.Stat(); err == nil && st.IsDir() {
			err = errors.New("is a directory")
		}
		if err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, "", nil, usageError(fmt.Errorf("cannot read %s: %w", path, err))
	}
	return f, path, func() { _ = f.Close() }, nil
}

func printXIDTable(out io.Writer, name string, ds []xid.Decoded) error {
	if len(ds) == 0 {
		_, err := fmt.Fprintf(out, "no XID events in %s\n", name)
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tDEVICE\tMIG\tXID\tNAME\tCOMPONENT\tSEVERITY\tACTION\tPROCESS\tWHY")
	worst := fault.SeverityInfo
	consequences := 0
	devices := map[string]bool{}
	for _, d := range ds {
		r := d.Record()
		mnemonic, _, _ := strings.Cut(r.Mnemonic, " / ") // 13 has two names
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", orDash(r.Stamp), r.PCIBusID, migText(r), xidText(r),
			mnemonic, r.Component, r.Severity, actionText(d), processText(r), d.Reason)
		worst = fault.MaxSeverity(worst, d.Severity)
		devices[r.PCIBusID] = true
		if d.Consequence {
			consequences++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "\n%s on %s, %d of them %s of another XID; worst severity: %s\n",
		countOf(len(ds), "event"), countOf(len(devices), "device"), consequences, nounFor(consequences, "consequence"), worst)
	return err
}

func migText(r xid.Record) string {
	switch {
	case r.GPUInstance != nil && r.ComputeInstance != nil:
		return fmt.Sprintf("GI %d CI %d", *r.GPUInstance, *r.ComputeInstance)
	case r.GPUInstance != nil:
		return fmt.Sprintf("GI %d", *r.GPUInstance)
	}
	return "-"
}

func xidText(r xid.Record) string {
	s := fmt.Sprint(r.XID)
	if r.Kind == "sxid" {
		s = "SXid " + s
	}
	if r.Derived {
		s += "*"
	}
	return s
}

func actionText(d xid.Decoded) string {
	var extra []string
	if d.Drain {
		extra = append(extra, "drain first")
	}
	if d.RunDiagnostics {
		extra = append(extra, "diagnostics")
	}
	if len(extra) == 0 {
		return string(d.Action)
	}
	return string(d.Action) + " (" + strings.Join(extra, ", ") + ")"
}

func processText(r xid.Record) string {
	var parts []string
	if r.PID != nil {
		parts = append(parts, fmt.Sprint(*r.PID))
	}
	if r.Process != nil {
		parts = append(parts, *r.Process)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func countOf(n int, word string) string { return fmt.Sprintf("%d %s", n, nounFor(n, word)) }

func nounFor(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
