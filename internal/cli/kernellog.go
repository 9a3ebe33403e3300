package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/kmsg"
	"github.com/gpunode/gpunode/internal/xid"
)

// readXIDs scans the kernel log for XID reports.
func (o *factOptions) readXIDs(ctx context.Context, b gpu.Backend) ([]xid.Event, error) {
	msgs, err := o.kernelMessages(ctx, b)
	if err != nil {
		return nil, err
	}
	return scanXIDs(msgs), nil
}

// scanXIDs finds the XID reports in kernel-log lines with the same scanner the health
// monitor uses (a message can span lines; the driver's own lines map PCI to UUID).
func scanXIDs(lines []string) []xid.Event {
	var sc xid.Scanner
	var out []xid.Event
	for _, l := range lines {
		if ev, ok := sc.Line(l); ok {
			out = append(out, ev)
		}
	}
	sc.Devices().Attribute(out)
	return out
}

// kernelMessages returns the kernel log since boot: the simulated GPUs' own log, the live
// /dev/kmsg (kernel-facility records only, unless told to trust user records), or a saved
// log (kmsg records, dmesg, dmesg -T, journald or syslog text), line by line.
func (o *factOptions) kernelMessages(ctx context.Context, b gpu.Backend) ([]string, error) {
	if sb, ok := b.(*sim.Backend); ok && o.kernelLog == defaultKernelLog {
		var out []string
		for _, l := range sb.KernelLog() {
			out = append(out, l.Text)
		}
		return out, nil
	}
	switch o.kernelLog {
	case "none", "":
		return nil, fmt.Errorf("not read (--kernel-log none)")
	}
	st, err := os.Stat(o.kernelLog)
	if err != nil {
		if o.kernelLog != defaultKernelLog {
			// A file the user named that is not there is bad input, not a skipped check.
			return nil, usageError(fmt.Errorf("--kernel-log %s: %w", o.kernelLog, err))
		}
		return nil, fmt.Errorf("kernel log %s: %w", o.kernelLog, err)
	}
	if st.Mode()&os.ModeCharDevice != 0 {
		recs, err := kmsg.ReadAll(ctx, o.kernelLog)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, r := range recs {
			if r.FromKernel() || o.trustUserKmsg {
				out = append(out, r.Message)
			}
		}
		return out, nil
	}
	return readTextLog(o.kernelLog)
}

// readTextLog reads a saved log line by line.
func readTextLog(path string) ([]string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, usageError(fmt.Errorf("--kernel-log %s: %w", path, err))
	}
	defer func() { _ = fh.Close() }()
	var out []string
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("kernel log %s: %w", path, err)
	}
	return out, nil
}
