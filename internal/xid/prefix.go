package xid

import (
	"strconv"
	"strings"
	"time"
)

// stamp is what a kernel-log line's prefix says about when it was logged.
type stamp struct {
	text   string        // the timestamp as printed
	uptime time.Duration // since boot (/dev/kmsg, dmesg); 0 when the prefix has none
	time   time.Time     // wall clock (dmesg -T, syslog, journald); zero when none
}

// acceptPrefix reports whether the text before a driver message is a kernel-log prefix, and
// nothing else: empty (or only the indentation of a journald continuation line), a
// /dev/kmsg record header "<prio>,<seq>,<usec>,<flags>;", a syslog priority "<4>", a
// syslog/journald header ending in "kernel:", a "dmesg -x" facility and level, and dmesg
// brackets (timestamp, dmesg -T time, caller id). Anything else (a line of another program
// quoting the driver: "host myscript[42]: NVRM: ...", an echo in a shell log) is rejected.
func acceptPrefix(p string) bool {
	p = strings.TrimSpace(p)
	if i := strings.Index(p, "kernel:"); i >= 0 {
		if !isSyslogHeader(p[:i]) {
			return false
		}
		p = strings.TrimSpace(p[i+len("kernel:"):])
	}
	if i := strings.IndexByte(p, ';'); i >= 0 {
		if !isKmsgHeader(p[:i]) {
			return false
		}
		p = strings.TrimSpace(p[i+1:])
	}
	if strings.HasPrefix(p, "<") {
		j := strings.IndexByte(p, '>')
		if j != 2 || p[1] < '0' || p[1] > '7' { // "<0>".."<7>": the kernel facility
			return false
		}
		p = strings.TrimSpace(p[j+1:])
	}
	p, ok := trimDmesgLevel(p)
	if !ok {
		return false
	}
	for strings.HasPrefix(p, "[") {
		j := strings.IndexByte(p, ']')
		if j < 0 {
			return false
		}
		p = strings.TrimSpace(p[j+1:])
	}
	return p == ""
}

// isKmsgHeader checks "<prio>,<seq>,<usec>,<flags>[,key=value...]" of a kernel record: the
// syslog facility (prio / 8) of the kernel's own messages is 0; a record that user space
// wrote into /dev/kmsg (systemd, a script) has another and only quotes the driver.
func isKmsgHeader(h string) bool {
	f := strings.Split(h, ",")
	return len(f) >= 4 && allDigits(f[0]) && len(f[0]) == 1 && f[0][0] < '8' && allDigits(f[1]) && allDigits(f[2])
}

// trimDmesgLevel removes a "dmesg -x" prefix such as "kern  :err   : ". ok is false for a
// prefix of another facility ("user  :notice: ", "daemon:info  : "): a record user space
// wrote into the kernel's log, which only quotes the driver.
func trimDmesgLevel(p string) (string, bool) {
	fac, rest, found := strings.Cut(p, ":")
	if !found || !allLetters(strings.TrimSpace(fac)) {
		return p, true
	}
	lvl, rest, found := strings.Cut(rest, ":")
	if !found || !allLetters(strings.TrimSpace(lvl)) {
		return p, true
	}
	return strings.TrimSpace(rest), strings.TrimSpace(fac) == "kern"
}

// isSyslogHeader reports whether h, the text before a "kernel:" tag, is a syslog or
// journald header and nothing else: empty, or a timestamp of one to four fields
// ("May 18 19:02:39", "2026-12-01T12:00:00.123+00:00", journald's "[  851.885993]") then the
// host name, optionally after a syslog priority of the kernel facility ("<4>"). Another
// program's tag before the word ("host myscript[42]: kernel: ...") or any other text (a
// shell's echo) is not: the line only quotes the driver.
func isSyslogHeader(h string) bool {
	f := strings.Fields(h)
	if len(f) > 0 && strings.HasPrefix(f[0], "<") { // "<4>", or "<4>May" with no space
		if len(f[0]) < 3 || f[0][1] < '0' || f[0][1] > '7' || f[0][2] != '>' {
			return false
		}
		if f[0] = f[0][3:]; f[0] == "" {
			f = f[1:]
		}
	}
	if len(f) == 0 {
		return true
	}
	host, stamp := f[len(f)-1], f[:len(f)-1]
	if len(stamp) < 1 || len(stamp) > 4 || strings.ContainsAny(host, ":[]()'\"`$;=") {
		return false
	}
	for _, w := range stamp {
		if strings.HasSuffix(w, ":") || strings.TrimFunc(w, stampChar) != "" {
			return false
		}
	}
	return true
}

// stampChar is a character of a timestamp field: letters and digits, ":.+-" and journald's
// brackets.
func stampChar(c rune) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.ContainsRune(":.+-[]", c)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func allLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return s != ""
}

// parseStamp reads the timestamp in a line's prefix (the text before the driver message).
// It is only called for lines that carry an event, so it may be slow-ish.
func parseStamp(p string) stamp {
	var s stamp
	p = strings.TrimSpace(p)
	// /dev/kmsg record: <prio>,<seq>,<usec>,<flags>[,...];
	if i := strings.IndexByte(p, ';'); i > 0 && i == len(p)-1 {
		f := strings.Split(p[:i], ",")
		if len(f) >= 4 {
			if us, err := strconv.ParseInt(f[2], 10, 64); err == nil && us >= 0 {
				s.text = f[2]
				s.uptime = time.Duration(us) * time.Microsecond
			}
		}
		return s
	}
	// dmesg: "[16450076.435595]" or dmesg -T "[Sun Feb 23 16:24:18 2025]", possibly after a
	// syslog prefix, possibly followed by a caller id "[ T1946]".
	if i := strings.IndexByte(p, '['); i >= 0 {
		if j := strings.IndexByte(p[i:], ']'); j > 0 {
			inner := strings.TrimSpace(p[i+1 : i+j])
			if d, ok := parseSeconds(inner); ok {
				s.text, s.uptime = inner, d
			} else if t, err := time.Parse("Mon Jan _2 15:04:05 2006", inner); err == nil {
				s.text, s.time = inner, t
			}
		}
		if i > 0 && s.time.IsZero() {
			s.time = syslogTime(p[:i], &s)
		}
		return s
	}
	s.time = syslogTime(p, &s)
	return s
}

// parseSeconds reads a dmesg "seconds.microseconds" timestamp.
func parseSeconds(s string) (time.Duration, bool) {
	dot := strings.IndexByte(s, '.')
	if dot <= 0 || dot == len(s)-1 {
		return 0, false
	}
	sec, err1 := strconv.ParseInt(s[:dot], 10, 64)
	frac := s[dot+1:]
	if len(frac) > 9 {
		frac = frac[:9]
	}
	ns, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || sec < 0 || ns < 0 || sec > 1<<32 {
		return 0, false
	}
	for i := len(frac); i < 9; i++ {
		ns *= 10
	}
	return time.Duration(sec)*time.Second + time.Duration(ns), true
}

// syslogLayouts are the wall-clock prefixes of syslog and journalctl output. Classic syslog
// has no year: such times are in year 0, fine for differences within one log.
var syslogLayouts = []struct {
	layout string
	n      int // number of space-separated words the layout spans
}{
	{"Jan _2 15:04:05", 3},
	{"Jan _2 15:04:05.000000", 3},
	{time.RFC3339Nano, 1},
	{"2006-01-02T15:04:05-0700", 1},
	{"2006-01-02T15:04:05.000000-0700", 1},
}

func syslogTime(p string, s *stamp) time.Time {
	words := strings.Fields(p)
	for _, l := range syslogLayouts {
		if len(words) < l.n {
			continue
		}
		text := strings.Join(words[:l.n], " ")
		if t, err := time.Parse(l.layout, text); err == nil {
			if s.text == "" {
				s.text = text
			}
			return t
		}
	}
	return time.Time{}
}
