package evidence

import (
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/kmsg"
)

// KernelSource supplies the kernel-log records of a window, oldest first.
type KernelSource interface {
	Records(ctx context.Context, w Window) ([]KernelRecord, error)
}

// KmsgDevice reads the window from the kernel's own ring buffer (/dev/kmsg) at capture:
// what a reboot would erase. Record times since boot are placed on the wall clock with the
// boot time, now minus the uptime in /proc/uptime under Root.
type KmsgDevice struct {
	// Path is the record device; empty means /dev/kmsg.
	Path string
	// Root is the host root /proc/uptime is read under.
	Root fs.FS
	// Clock gives now; nil means time.Now.
	Clock func() time.Time
	// TrustUserRecords also returns user-facility records (anyone with write access to
	// /dev/kmsg can forge those); off, only the kernel's own records are kept.
	TrustUserRecords bool
}

// Records reads every record in the ring buffer and returns those in w.
func (k KmsgDevice) Records(ctx context.Context, w Window) ([]KernelRecord, error) {
	boot, err := k.bootTime()
	if err != nil {
		return nil, err
	}
	path := k.Path
	if path == "" {
		path = kmsg.DefaultPath
	}
	recs, err := kmsg.ReadAll(ctx, path)
	if err != nil {
		return nil, err
	}
	var out []KernelRecord
	for _, r := range recs {
		if !r.FromKernel() && !k.TrustUserRecords {
			continue
		}
		t := boot.Add(r.Since)
		if w.Contains(t) {
			out = append(out, KernelRecord{Time: t, Seq: r.Seq, Level: r.Level, Text: r.Message})
		}
	}
	return out, nil
}

// bootTime is now minus /proc/uptime's first field.
func (k KmsgDevice) bootTime() (time.Time, error) {
	if k.Root == nil {
		return time.Time{}, fmt.Errorf("kernel log %s: no host root to read /proc/uptime under", k.Path)
	}
	data, err := fs.ReadFile(k.Root, "proc/uptime")
	if err != nil {
		return time.Time{}, fmt.Errorf("boot time from /proc/uptime: %w", err)
	}
	up, err := parseUptime(string(data))
	if err != nil {
		return time.Time{}, err
	}
	now := time.Now
	if k.Clock != nil {
		now = k.Clock
	}
	return now().Add(-up), nil
}

// parseUptime reads "12345.67 890.12" (seconds since boot, seconds idle).
func parseUptime(s string) (time.Duration, error) {
	f, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	v, err := strconv.ParseFloat(f, 64)
	if err != nil || v < 0 || v > 1e10 {
		return 0, fmt.Errorf("boot time from /proc/uptime %q: not a number of seconds", clipText(s, 40))
	}
	return time.Duration(v * float64(time.Second)), nil
}
