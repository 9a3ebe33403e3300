package xid

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
)

// MaxLineBytes is the longest line read as a kernel-log line. The kernel prints at most
// 1 KiB per message and /dev/kmsg carries at most 8 KiB per record; a saved log's longer
// line is another program's (a JSON blob, a binary dump) and is skipped, not an error: an
// error here once made acceptance skip the XID check of the whole log.
const MaxLineBytes = 64 << 10

// LineStats says what ReadLines read and skipped.
type LineStats struct {
	Lines int `json:"lines"`
	// Long counts the lines past MaxLineBytes, skipped whole.
	Long int `json:"long,omitempty"`
}

// ReadLines calls fn with each line of r, without its line ending, in order, holding at most
// MaxLineBytes in memory whatever the input. A line past MaxLineBytes is skipped and counted.
// The context is checked every 4,096 lines; name is used in errors.
func ReadLines(ctx context.Context, r io.Reader, name string, fn func(line string)) (LineStats, error) {
	var st LineStats
	br := bufio.NewReaderSize(r, MaxLineBytes)
	long := false // inside a line past the cap: discard up to its end
	for {
		frag, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			long = true
			continue
		case len(frag) > 0 || err == nil:
			if (st.Lines+st.Long)%4096 == 0 && ctx.Err() != nil {
				return st, fmt.Errorf("%s: %w", name, ctx.Err())
			}
			if long {
				st.Long++
				long = false
			} else {
				st.Lines++
				fn(string(trimEOL(frag)))
			}
		}
		if errors.Is(err, io.EOF) {
			if long {
				st.Long++
			}
			return st, nil
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return st, fmt.Errorf("%s: %w", name, err)
		}
	}
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}
