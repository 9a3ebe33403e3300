package cli

import (
	"context"

	"github.com/gpunode/gpunode/internal/platform"
	"github.com/gpunode/gpunode/internal/xid"
)

// readXIDs scans the kernel log for XID reports.
func (o *factOptions) readXIDs(ctx context.Context, p *platform.Platform) ([]xid.Event, error) {
	msgs, err := o.kernelMessages(ctx, p)
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

// kernelMessages returns the kernel log since boot (platform.KernelMessages), also when no
// GPU backend could be opened (p nil).
func (o *factOptions) kernelMessages(ctx context.Context, p *platform.Platform) ([]string, error) {
	var lines []string
	var err error
	if p != nil {
		lines, err = p.KernelMessages(ctx)
	} else {
		lines, err = platform.ReadKernelLog(ctx, o.platformOptions())
	}
	return lines, platformError(err)
}
