package platform

import (
	"context"
	"fmt"
	"os"

	"github.com/gpunode/gpunode/internal/evidence"
	"github.com/gpunode/gpunode/internal/kmsg"
	"github.com/gpunode/gpunode/internal/monitor"
	"github.com/gpunode/gpunode/internal/xid"
)

// KernelFollower is the health monitor's kernel log: the simulated node's own with
// simulated GPUs (and the default option), none for NoKernelLog, else the record device
// followed by f (its start mode and cursor file; the path and trust come from the options).
func (p *Platform) KernelFollower(f *kmsg.Follower) monitor.KernelSource {
	switch {
	case p.sim != nil && p.o.KernelLog == DefaultKernelLog:
		return monitor.SimKernel(p.sim, 0)
	case p.o.KernelLog == NoKernelLog || p.o.KernelLog == "":
		return nil
	}
	f.Path, f.TrustUserRecords = p.o.KernelLog, p.o.TrustUserKmsg
	return monitor.FollowKmsg(f)
}

// KernelMessages returns the kernel log since boot, line by line: the simulated node's own,
// the live record device (kernel-facility records only, unless told to trust user records),
// or a saved log (kmsg records, dmesg, dmesg -T, journald or syslog text). A log the user
// named that is not there is an *InvalidError.
func (p *Platform) KernelMessages(ctx context.Context) ([]string, error) {
	if p.sim != nil && p.o.KernelLog == DefaultKernelLog {
		var out []string
		for _, l := range p.sim.KernelLog() {
			out = append(out, l.Text)
		}
		return out, nil
	}
	return ReadKernelLog(ctx, p.o)
}

// ReadKernelLog reads the kernel log o.KernelLog names, without GPUs (KernelMessages less
// the simulated node's own log): for a command whose GPU backend could not be opened.
func ReadKernelLog(ctx context.Context, o Options) ([]string, error) {
	path := o.KernelLog
	if path == NoKernelLog || path == "" {
		return nil, fmt.Errorf("not read (--kernel-log none)")
	}
	st, err := os.Stat(path)
	if err != nil {
		if path != DefaultKernelLog {
			// A file the user named that is not there is bad input, not a skipped check.
			return nil, invalid("--kernel-log %s: %w", path, err)
		}
		return nil, fmt.Errorf("kernel log %s: %w", path, err)
	}
	if st.Mode()&os.ModeCharDevice != 0 {
		recs, err := kmsg.ReadAll(ctx, path)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, r := range recs {
			if r.FromKernel() || o.TrustUserKmsg {
				out = append(out, r.Message)
			}
		}
		return out, nil
	}
	return readTextLog(path)
}

// readTextLog reads a saved log line by line (xid.ReadLines: a line past its cap is another
// program's and is skipped, so one long line cannot hide the XIDs after it).
func readTextLog(path string) ([]string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, invalid("--kernel-log %s: %w", path, err)
	}
	defer func() { _ = fh.Close() }()
	var out []string
	_, err = xid.ReadLines(context.Background(), fh, "kernel log "+path, func(line string) { out = append(out, line) })
	return out, err
}

// EvidenceKernel is the kernel log an evidence bundle takes, and the host root it reads the
// boot facts under: the simulated node's log and no host root with simulated GPUs, the
// record device's ring buffer and the host root otherwise.
func (p *Platform) EvidenceKernel() (evidence.KernelSource, bool) {
	if p.sim != nil {
		return simKernelRecords{p}, false
	}
	return evidence.KmsgDevice{Root: p.Root()}, true
}

// simKernelRecords is a simulated node's kernel log as an evidence source.
type simKernelRecords struct{ p *Platform }

func (s simKernelRecords) Records(_ context.Context, w evidence.Window) ([]evidence.KernelRecord, error) {
	var out []evidence.KernelRecord
	for _, l := range s.p.sim.KernelLog() {
		if !l.Time.Before(w.From()) {
			out = append(out, evidence.KernelRecord{Time: l.Time, Level: -1, Text: l.Text})
		}
	}
	return out, nil
}
