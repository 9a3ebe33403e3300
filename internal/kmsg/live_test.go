package kmsg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests use the machine's own /dev/kmsg. They skip, saying why, where it cannot be
// read (a container without CAP_SYSLOG, a sandbox); on the lent H200 it can.

func liveKmsg(t *testing.T) {
	t.Helper()
	fd, err := unix.Open(DefaultPath, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Skipf("live kernel log %s not readable here: %v", DefaultPath, err)
	}
	_ = unix.Close(fd)
}

// followLive runs f on /dev/kmsg for d, then cancels it and checks that it stops promptly.
func followLive(t *testing.T, f *Follower, d time.Duration, during func()) []Record {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu  sync.Mutex
		out []Record
	)
	done := make(chan error, 1)
	go func() {
		done <- f.Run(ctx, func(it Item) error {
			if it.Gap != nil {
				t.Logf("gap: %+v", *it.Gap)
				return nil
			}
			mu.Lock()
			out = append(out, it.Record)
			mu.Unlock()
			return nil
		})
	}()
	wait := d
	if during != nil {
		time.Sleep(d / 2)
		during()
		wait = d / 2
	}
	select {
	case err := <-done:
		t.Fatalf("Run ended before cancel: %v", err)
	case <-time.After(wait):
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		t.Logf("live: stopped %v after cancel; stats %+v", time.Since(start), f.Stats())
	case <-time.After(5 * time.Second):
		t.Fatal("Run on /dev/kmsg still running 5 s after cancel")
	}
	mu.Lock()
	defer mu.Unlock()
	return out
}

func TestLiveFollowerResumesAcrossARestartOnTheRealKernelLog(t *testing.T) {
	liveKmsg(t)
	state := filepath.Join(t.TempDir(), "kmsg.cursor")
	first := followLive(t, &Follower{StatePath: state}, 400*time.Millisecond, nil)
	if len(first) == 0 {
		t.Fatal("no kernel record delivered from a live /dev/kmsg")
	}
	for i, r := range first {
		if !r.FromKernel() || (i > 0 && r.Seq <= first[i-1].Seq) {
			t.Fatalf("record %d: %+v (facility must be kernel, seq increasing)", i, r)
		}
	}
	c, ok, err := LoadCursor(state)
	if err != nil || !ok || c.Seq < first[len(first)-1].Seq {
		t.Fatalf("cursor after the first run: %+v, %v, %v", c, ok, err)
	}
	f := &Follower{StatePath: state}
	second := followLive(t, f, 400*time.Millisecond, nil)
	if f.Stats().Start != "cursor" {
		t.Fatalf("second run started %q, want cursor (same boot)", f.Stats().Start)
	}
	for _, r := range second {
		if r.Seq <= c.Seq {
			t.Fatalf("record %d delivered again after a restart (cursor %d)", r.Seq, c.Seq)
		}
	}
	t.Logf("live: first run %d records (last seq %d), second run %d new, %d skipped",
		len(first), first[len(first)-1].Seq, len(second), f.Stats().Skipped)
}

func TestLiveFollowerFromTheEndSkipsOldRecords(t *testing.T) {
	liveKmsg(t)
	old, err := ReadAll(context.Background(), DefaultPath)
	if err != nil || len(old) == 0 {
		t.Fatalf("ReadAll: %d records, %v", len(old), err)
	}
	last := old[len(old)-1].Seq
	for _, r := range followLive(t, &Follower{Start: StartEnd, TrustUserRecords: true}, 300*time.Millisecond, nil) {
		if r.Seq <= last {
			t.Fatalf("StartEnd delivered old record %d (newest before start %d)", r.Seq, last)
		}
	}
}

// TestLiveSpoofedRecordsAreDropped writes to the machine's kernel log, so it runs only when
// asked to: GPUNODE_KMSG_WRITE_TEST=1 (as root on the lent H200).
func TestLiveSpoofedRecordsAreDropped(t *testing.T) {
	liveKmsg(t)
	if os.Getenv("GPUNODE_KMSG_WRITE_TEST") != "1" {
		t.Skip("writes to the machine's kernel log: set GPUNODE_KMSG_WRITE_TEST=1 to run it")
	}
	write := func(msg string) {
		w, err := os.OpenFile(DefaultPath, os.O_WRONLY, 0)
		if err != nil {
			t.Fatalf("write %s (root needed): %v", DefaultPath, err)
		}
		defer func() { _ = w.Close() }()
		if _, err := w.WriteString(msg); err != nil {
			t.Fatal(err)
		}
	}
	for _, trust := range []bool{false, true} {
		t.Run(fmt.Sprintf("trust user records %v", trust), func(t *testing.T) {
			nonce := fmt.Sprintf("gpunode-kmsg-test %d", time.Now().UnixNano())
			line := "<3>NVRM: Xid (PCI:0000:00:06): 13, " + nonce + "\n"
			f := &Follower{Start: StartEnd, TrustUserRecords: trust}
			var seen []Record
			for _, r := range followLive(t, f, 400*time.Millisecond, func() { write(line) }) {
				if strings.Contains(r.Message, nonce) {
					seen = append(seen, r)
				}
			}
			switch {
			case !trust && (len(seen) != 0 || f.Stats().UserDropped == 0):
				t.Fatalf("untrusted: delivered %+v, dropped %d; want none delivered, one dropped", seen, f.Stats().UserDropped)
			case trust && (len(seen) != 1 || seen[0].Facility != 1 || seen[0].Level != 3):
				t.Fatalf("trusted: delivered %+v, want one record of facility 1 (user), level 3", seen)
			}
		})
	}
}
