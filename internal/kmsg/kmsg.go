// Package kmsg reads the kernel log: /dev/kmsg records (the live ring buffer) and the
// text forms that dmesg, journald and syslog write.
package kmsg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Record is one /dev/kmsg record.
type Record struct {
	// Facility 0 is the kernel; 1 is user space (anything with write access to /dev/kmsg).
	Facility int    `json:"facility"`
	Level    int    `json:"level"`
	Seq      uint64 `json:"seq"`
	// Since is the time since boot.
	Since   time.Duration `json:"sinceBoot"`
	Message string        `json:"message"`
}

// FromKernel reports whether the kernel itself wrote the record.
func (r Record) FromKernel() bool { return r.Facility == 0 }

// ParseRecord parses "<prio>,<seq>,<usec>,<flags>[,...];message\n[ KEY=value\n...]".
func ParseRecord(b []byte) (Record, error) {
	s := string(b)
	head, msg, ok := strings.Cut(s, ";")
	if !ok {
		return Record{}, fmt.Errorf("kmsg record %q: no ';' separator", truncate(s))
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i] // continuation lines are dictionary key=value pairs
	}
	f := strings.Split(head, ",")
	if len(f) < 3 {
		return Record{}, fmt.Errorf("kmsg record %q: want prio,seq,usec in the header", truncate(s))
	}
	prio, err1 := strconv.Atoi(f[0])
	seq, err2 := strconv.ParseUint(f[1], 10, 64)
	usec, err3 := strconv.ParseInt(f[2], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil || prio < 0 || usec < 0 {
		return Record{}, fmt.Errorf("kmsg record %q: bad header", truncate(s))
	}
	return Record{Facility: prio >> 3, Level: prio & 7, Seq: seq, Since: time.Duration(usec) * time.Microsecond, Message: unescape(msg)}, nil
}

// unescape turns the kernel's \xNN escapes back into bytes.
func unescape(s string) string {
	if !strings.Contains(s, `\x`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// ReadAll reads every record now in the ring buffer at path (normally /dev/kmsg) without
// blocking. Records lost to a ring-buffer overrun are skipped (the kernel reports EPIPE
// once and moves on). A regular file of records (tests) is read the same way, one record
// per line.
func ReadAll(ctx context.Context, path string) ([]Record, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open kernel log %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer func() { _ = f.Close() }()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		data, err := io.ReadAll(f)
		if err != nil {
			return nil, fmt.Errorf("read kernel log %s: %w", path, err)
		}
		var out []Record
		for _, line := range strings.Split(string(data), "\n") {
			if r, err := ParseRecord([]byte(line)); err == nil {
				out = append(out, r)
			}
		}
		return out, nil
	}
	var out []Record
	buf := make([]byte, 8192) // a record is at most 1 KiB of text plus dictionary
	for {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		n, err := syscall.Read(fd, buf)
		switch {
		case err == syscall.EAGAIN:
			return out, nil
		case err == syscall.EPIPE:
			continue // overrun: the oldest records were overwritten
		case err == syscall.EINTR:
			continue
		case err != nil:
			return out, fmt.Errorf("read kernel log %s: %w", path, err)
		case n == 0:
			return out, nil
		}
		if r, perr := ParseRecord(buf[:n]); perr == nil {
			out = append(out, r)
		}
	}
}
