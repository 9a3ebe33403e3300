package kmsg

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"golang.org/x/sys/unix"
)

// readBufSize is the read buffer for one record. The kernel formats a record into at most
// CONSOLE_EXT_LOG_MAX (8 KiB) and answers EINVAL to a smaller buffer; twice that is safe.
const readBufSize = 16 << 10

// source is the follower's view of the kernel log: one record per read, and a way to wait
// for the next. The real one is devSource; tests drive the follower with a fake.
type source interface {
	// Read reads one record into buf. It returns unix.EAGAIN when no record is ready,
	// unix.EPIPE when the record it was about to return was overwritten (the next read
	// returns the oldest record still there), unix.EINTR when interrupted, and 0 bytes at
	// the end of the input (a pipe whose writer closed; /dev/kmsg never ends).
	Read(buf []byte) (int, error)
	// Wait blocks until a record may be ready, ctx is done (it then returns ctx.Err()), or
	// timeout has passed (timeout < 0: no timeout).
	Wait(ctx context.Context, timeout time.Duration) error
	// SeekEnd skips every record already in the log.
	SeekEnd() error
	Close() error
}

// devSource reads /dev/kmsg (or a FIFO, in tests) through a non-blocking descriptor and
// waits in poll(2) on that descriptor and an eventfd that a cancelled context writes to,
// so a wait costs no CPU and ends as soon as the context is cancelled.
type devSource struct {
	path string
	fd   int
	wake int // eventfd, readable once the context passed to Wait is done
}

func openDev(path string) (source, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open kernel log %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("stat kernel log %s: %w", path, err)
	}
	if mode := st.Mode & unix.S_IFMT; mode != unix.S_IFCHR && mode != unix.S_IFIFO {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("kernel log %s: not a character device or FIFO (a saved log is read with ReadAll, or as text by internal/xid's Scanner)", path)
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("kernel log %s: eventfd: %w", path, err)
	}
	return &devSource{path: path, fd: fd, wake: wake}, nil
}

func (s *devSource) Read(buf []byte) (int, error) {
	n, err := unix.Read(s.fd, buf)
	if n < 0 {
		n = 0
	}
	return n, err
}

func (s *devSource) Wait(ctx context.Context, timeout time.Duration) error {
	signalled := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { s.signal(); close(signalled) })
	defer func() {
		if !stop() {
			<-signalled // never let a late signal write to a closed (or reused) descriptor
		}
	}()
	if err := ctx.Err(); err != nil {
		return err
	}
	ms := -1
	if timeout >= 0 {
		ms = int(min((timeout+time.Millisecond-1)/time.Millisecond, math.MaxInt32))
	}
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}, {Fd: int32(s.wake), Events: unix.POLLIN}}
	if _, err := unix.Poll(fds, ms); err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("poll kernel log %s: %w", s.path, err)
	}
	// POLLHUP/POLLERR are left to the next read, which reports them as EOF or an error.
	return ctx.Err()
}

// signal makes the eventfd readable; a pending poll returns.
func (s *devSource) signal() {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(s.wake, one[:])
}

func (s *devSource) SeekEnd() error {
	if _, err := unix.Seek(s.fd, 0, io.SeekEnd); err != nil {
		return fmt.Errorf("seek to the end of kernel log %s: %w", s.path, err)
	}
	return nil
}

func (s *devSource) Close() error {
	return errors.Join(unix.Close(s.fd), unix.Close(s.wake))
}
