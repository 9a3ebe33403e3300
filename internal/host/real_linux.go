//go:build linux

package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// realStatfs returns a Statfs of the host mounted at rootDir.
func realStatfs(rootDir string) func(string) (StatFS, error) {
	return func(p string) (StatFS, error) {
		var st unix.Statfs_t
		if err := unix.Statfs(filepath.Join(rootDir, p), &st); err != nil {
			return StatFS{}, fmt.Errorf("statfs %s: %w", p, err)
		}
		unit := uint64(st.Frsize)
		if unit == 0 {
			unit = uint64(st.Bsize)
		}
		return StatFS{
			TotalBytes:  st.Blocks * unit,
			FreeBytes:   st.Bavail * unit,
			TotalInodes: st.Files,
			FreeInodes:  st.Ffree,
		}, nil
	}
}

// realExec runs a host binary of the host mounted at rootDir and returns its standard
// output; a failure carries the start of its standard error.
func realExec(rootDir string) func(context.Context, string, ...string) ([]byte, error) {
	return func(ctx context.Context, p string, args ...string) ([]byte, error) {
		out, err := exec.CommandContext(ctx, filepath.Join(rootDir, p), args...).Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			msg := bytes.TrimSpace(ee.Stderr)
			if len(msg) > 200 {
				msg = msg[:200]
			}
			return out, fmt.Errorf("%w: %s", err, msg)
		}
		return out, err
	}
}

// maxSyncErrorMicros is systemd's limit: the clock counts as synchronized while the kernel's
// maximum error estimate is below 16 s (the value NTP daemons leave when they stop).
const maxSyncErrorMicros = 16_000_000

// realClockSynced asks the kernel (adjtimex, read only) whether the clock is synchronized,
// with the test timedatectl uses.
func realClockSynced() (bool, error) {
	var tx unix.Timex
	if _, err := unix.Adjtimex(&tx); err != nil {
		return false, err
	}
	return tx.Maxerror < maxSyncErrorMicros, nil
}
