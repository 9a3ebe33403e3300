package kmsg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fifo makes a named pipe and opens it for writing (read-write, so the open does not wait
// for a reader and the follower's reads see no end of input until it is closed).
func fifo(t *testing.T) (string, *os.File) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kmsg.fifo")
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatalf("mkfifo %s: %v", p, err)
	}
	w, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return p, w
}

func TestFollowerOnANamedPipeWaitsInPollAndStopsOnCancel(t *testing.T) {
	p, w := fifo(t)
	f := &Follower{Path: p}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan Record, 10)
	done := make(chan error, 1)
	go func() {
		done <- f.Run(ctx, func(it Item) error {
			got <- it.Record
			return nil
		})
	}()
	// One write at a time, each read before the next is written: a pipe, unlike
	// /dev/kmsg, does not keep writes apart.
	for seq := uint64(1); seq <= 3; seq++ {
		if _, err := w.WriteString(rec(seq, 0).rec); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-got:
			if r.Seq != seq {
				t.Fatalf("got record %d, want %d", r.Seq, seq)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("record %d written to the pipe never arrived", seq)
		}
	}
	time.Sleep(50 * time.Millisecond) // let it block in poll
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v", err)
		}
		t.Logf("stopped %v after cancel (blocked in poll on a pipe)", time.Since(start))
	case <-time.After(5 * time.Second):
		t.Fatal("Run still blocked 5 s after cancel")
	}
}

func TestFollowerOnANamedPipeEndsWhenTheWriterCloses(t *testing.T) {
	p, w := fifo(t)
	if _, err := w.WriteString(rec(1, 0).rec); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	n := 0
	go func() {
		done <- (&Follower{Path: p}).Run(context.Background(), func(Item) error { n++; return nil })
	}()
	time.Sleep(50 * time.Millisecond)
	_ = w.Close()
	select {
	case err := <-done:
		if err != nil || n != 1 {
			t.Fatalf("Run = %v after %d records, want nil after 1", err, n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end when the writer closed")
	}
}

func TestFollowerRefusesARegularFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kmsg.txt")
	if err := os.WriteFile(p, []byte(rec(1, 0).rec), 0o600); err != nil {
		t.Fatal(err)
	}
	err := (&Follower{Path: p}).Run(context.Background(), func(Item) error { return nil })
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "ReadAll") {
		t.Fatalf("Run = %v, want an error naming %s and pointing to ReadAll", err, p)
	}
}

func TestFollowerNamesAMissingDevice(t *testing.T) {
	err := (&Follower{Path: "/nonexistent/kmsg"}).Run(context.Background(), func(Item) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/kmsg") {
		t.Fatalf("Run = %v", err)
	}
}
