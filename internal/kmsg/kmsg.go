// Package kmsg reads the kernel log's /dev/kmsg records (the live ring buffer).
//
// ParseRecord and ReadAll read records; Follower follows /dev/kmsg live from a cursor
// (boot id and sequence number) that survives restarts, reports lost records as gaps and
// drops records written from user space. Saved text (dmesg, journald, syslog) is read by
// internal/xid's Scanner. Records, cursor, trust and overrun behaviour: docs/kernel-log.md.
package kmsg

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
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
// It allocates only the message string, so it keeps up with a flood.
func ParseRecord(b []byte) (Record, error) {
	semi := bytes.IndexByte(b, ';')
	if semi < 0 {
		return Record{}, fmt.Errorf("kmsg record %q: no ';' separator", truncate(string(b)))
	}
	head, msg := b[:semi], b[semi+1:]
	if i := bytes.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i] // continuation lines are dictionary key=value pairs
	}
	var f [3]uint64
	for i := range f {
		field := head
		if j := bytes.IndexByte(head, ','); j >= 0 {
			field, head = head[:j], head[j+1:]
		} else if i < len(f)-1 {
			return Record{}, fmt.Errorf("kmsg record %q: want prio,seq,usec in the header", truncate(string(b)))
		} else {
			head = nil
		}
		v, ok := parseDecimal(field)
		if !ok {
			return Record{}, fmt.Errorf("kmsg record %q: bad header", truncate(string(b)))
		}
		f[i] = v
	}
	prio, seq, usec := f[0], f[1], f[2]
	if prio > math.MaxInt32 || usec > math.MaxInt64/uint64(time.Microsecond) {
		return Record{}, fmt.Errorf("kmsg record %q: bad header", truncate(string(b)))
	}
	return Record{Facility: int(prio >> 3), Level: int(prio & 7), Seq: seq,
		Since: time.Duration(usec) * time.Microsecond, Message: unescape(string(msg))}, nil
}

// parseDecimal parses a non-empty run of ASCII digits that fits in a uint64.
func parseDecimal(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
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
