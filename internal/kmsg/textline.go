package kmsg

import (
	"strings"
	"time"
)

// TextFormat names the prefix a kernel-log text line was written with.
type TextFormat string

// The text formats ParseTextLine recognises.
const (
	// FormatBare is a line with no recognised prefix: all of it is the message.
	FormatBare TextFormat = "bare"
	// FormatKmsg is a /dev/kmsg record saved as text: "4,1234,5678,-;message".
	FormatKmsg TextFormat = "kmsg"
	// FormatDmesg is dmesg's default: "[16450076.435595] message" (seconds since boot),
	// also with dmesg -r's "<4>" priority in front.
	FormatDmesg TextFormat = "dmesg"
	// FormatDmesgTime is dmesg -T: "[Sun Feb 23 16:24:18 2025] message" (local time).
	FormatDmesgTime TextFormat = "dmesg-T"
	// FormatSyslog is syslog and journald's short and short-precise output:
	// "May 18 19:02:39[.123456] host kernel: message" (local time, no year).
	FormatSyslog TextFormat = "syslog"
	// FormatISO is journald's short-iso and short-iso-precise output and rsyslog's RFC 3339
	// timestamps: "2025-05-18T19:02:39[.123456]+0000 host kernel: message".
	FormatISO TextFormat = "iso"
	// FormatMonotonic is journald's short-monotonic output for the kernel:
	// "[16450076.435595] host kernel: message".
	FormatMonotonic TextFormat = "journal-monotonic"
)

// SourceKernel is the Source of lines from the kernel log.
const SourceKernel = "kernel"

// TextLine is one kernel-log text line taken apart.
type TextLine struct {
	Format TextFormat `json:"format"`
	// Time is the absolute time of the line; zero when the line does not say (dmesg,
	// bare lines, and syslog lines parsed without a reference time).
	Time time.Time `json:"time,omitzero"`
	// Since is the time since boot when HasSince is set (dmesg, kmsg, and syslog kernel lines
	// that carry the dmesg stamp).
	Since    time.Duration `json:"sinceBoot,omitempty"`
	HasSince bool          `json:"-"`
	// Host is the host name syslog and journald lines carry.
	Host string `json:"host,omitempty"`
	// Source is "kernel" for kernel-log lines, the syslog tag without its "[pid]" for other
	// syslog and journald lines, and empty for bare lines.
	Source string `json:"source,omitempty"`
	// Facility and Level come from a kmsg record or a "<prio>" prefix; -1 when unknown.
	// Facility 1 (user) means the line was written to /dev/kmsg from user space.
	Facility int `json:"facility"`
	Level    int `json:"level"`
	// Message is the text after the prefix.
	Message string `json:"message"`
}

// FromKernel reports whether the line is a kernel-log line not known to have been written
// from user space.
func (l TextLine) FromKernel() bool { return l.Source == SourceKernel && l.Facility <= 0 }

// ParseTextLine takes one line of kernel-log text apart: a saved /dev/kmsg record, dmesg,
// dmesg -T, syslog, or journald short, short-precise, short-iso, short-iso-precise and
// short-monotonic output; any other non-empty line is a bare message. Times without a zone
// are read in ref's location, and a syslog time (which has no year) takes the year that
// puts it at most two days after ref; a zero ref leaves syslog times zero. It returns
// false only for an empty line. It does not allocate, except to unescape a kmsg record.
func ParseTextLine(line string, ref time.Time) (TextLine, bool) {
	line = strings.TrimRight(line, "\r\n")
	if strings.TrimSpace(line) == "" {
		return TextLine{}, false
	}
	l := TextLine{Format: FormatBare, Facility: -1, Level: -1, Message: line}
	switch c := line[0]; {
	case c >= '0' && c <= '9':
		if parseKmsgText(&l, line) || parseISO(&l, line, ref.Location()) {
			return l, true
		}
	case c == '<' || c == '[':
		if parseBracketed(&l, line, ref.Location()) {
			return l, true
		}
	case c >= 'A' && c <= 'S':
		if parseSyslog(&l, line, ref) {
			return l, true
		}
	}
	return l, true
}

// parseKmsgText parses "prio,seq,usec[,flags...];message".
func parseKmsgText(l *TextLine, line string) bool {
	semi := strings.IndexByte(line, ';')
	if semi < 0 {
		return false
	}
	head := line[:semi]
	var f [3]uint64
	for i := range f {
		field := head
		if j := strings.IndexByte(head, ','); j >= 0 {
			field, head = head[:j], head[j+1:]
		} else if i < len(f)-1 {
			return false
		}
		v, ok := digits(field)
		if !ok {
			return false
		}
		f[i] = v
	}
	if f[0] > 1<<20 || f[2] > 1<<50 {
		return false
	}
	msg := line[semi+1:]
	l.Format, l.Source, l.Message = FormatKmsg, SourceKernel, unescape(msg)
	l.Facility, l.Level = int(f[0]>>3), int(f[0]&7)
	l.Since, l.HasSince = time.Duration(f[2])*time.Microsecond, true
	return true
}

// parseBracketed parses dmesg ("[secs] "), dmesg -r ("<prio>[secs] "), dmesg -T
// ("[Sun Feb 23 16:24:18 2025] ") and journald short-monotonic ("[secs] host kernel: ").
func parseBracketed(l *TextLine, line string, loc *time.Location) bool {
	facility, level := -1, -1
	rest := line
	if rest[0] == '<' {
		end := strings.IndexByte(rest, '>')
		if end < 0 {
			return false
		}
		prio, ok := digits(rest[1:end])
		if !ok || prio > 1<<20 {
			return false
		}
		facility, level, rest = int(prio>>3), int(prio&7), rest[end+1:]
	}
	if rest == "" || rest[0] != '[' {
		return false
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return false
	}
	inside, msg := rest[1:end], strings.TrimPrefix(rest[end+1:], " ")
	if d, ok := parseSeconds(inside); ok {
		l.Format, l.Since, l.HasSince = FormatDmesg, d, true
		if host, m, ok := cutHostKernel(msg); ok {
			l.Format, l.Host, msg = FormatMonotonic, host, m
		}
	} else if t, ok := parseCtime(inside, loc); ok {
		l.Format, l.Time = FormatDmesgTime, t
	} else {
		return false // "[drm] ..." and the like are messages, not prefixes
	}
	l.Source, l.Facility, l.Level, l.Message = SourceKernel, facility, level, stripCaller(msg)
	return true
}

// cutHostKernel splits "host kernel: message".
func cutHostKernel(s string) (host, msg string, ok bool) {
	sp := strings.IndexByte(s, ' ')
	if sp <= 0 || s[sp-1] == ':' || !strings.HasPrefix(s[sp:], " kernel: ") {
		return "", "", false
	}
	return s[:sp], s[sp+len(" kernel: "):], true
}

// stripCaller drops the "[T123] " or "[C1] " caller id that CONFIG_PRINTK_CALLER adds.
func stripCaller(msg string) string {
	if len(msg) < 5 || msg[0] != '[' || (msg[1] != 'T' && msg[1] != 'C') {
		return msg
	}
	end := strings.IndexByte(msg, ']')
	if end < 3 || end+1 >= len(msg) || msg[end+1] != ' ' {
		return msg
	}
	if _, ok := digits(msg[2:end]); !ok {
		return msg
	}
	return msg[end+2:]
}

// parseSyslog parses "May 18 19:02:39[.frac] host tag: message".
func parseSyslog(l *TextLine, line string, ref time.Time) bool {
	if len(line) < 16 || line[3] != ' ' || line[6] != ' ' {
		return false
	}
	mon, ok := parseMonth(line[:3])
	day, ok2 := parseDay(line[4:6])
	h, m, s, ok3 := parseClock(line[7:15])
	if !ok || !ok2 || !ok3 {
		return false
	}
	ns, n := parseFraction(line[15:])
	rest := line[15+n:]
	if rest == "" || rest[0] != ' ' {
		return false
	}
	l.Format = FormatSyslog
	if !ref.IsZero() {
		l.Time = syslogTime(ref, mon, day, h, m, s, ns)
	}
	splitHostTag(l, rest[1:])
	return true
}

// syslogTime gives a year-less time the year that puts it no later than two days after ref.
func syslogTime(ref time.Time, mon time.Month, day, h, m, s, ns int) time.Time {
	loc := ref.Location()
	t := time.Date(ref.Year(), mon, day, h, m, s, ns, loc)
	if t.After(ref.Add(48*time.Hour)) || t.Month() != mon {
		t = time.Date(ref.Year()-1, mon, day, h, m, s, ns, loc)
	}
	return t
}

// parseISO parses "2025-05-18T19:02:39[.frac](Z|+hhmm|+hh:mm) host tag: message".
func parseISO(l *TextLine, line string, loc *time.Location) bool {
	t, n, ok := parseISOTime(line, loc)
	if !ok || n >= len(line) || line[n] != ' ' {
		return false
	}
	l.Format, l.Time = FormatISO, t
	splitHostTag(l, line[n+1:])
	return true
}

// splitHostTag parses "host tag: message" or "tag: message" after a syslog or journald
// time. A kernel message may start with the dmesg stamp, which becomes Since.
func splitHostTag(l *TextLine, rest string) {
	l.Message = rest
	sp := strings.IndexByte(rest, ' ')
	if sp <= 0 {
		return
	}
	tok := rest[:sp]
	if tok[len(tok)-1] != ':' { // "host tag: message"
		l.Host, rest = tok, rest[sp+1:]
		l.Message = rest
		if sp = strings.IndexByte(rest, ' '); sp <= 0 || rest[sp-1] != ':' {
			return // "host message": no tag
		}
		tok = rest[:sp]
	}
	tag := tok[:len(tok)-1]
	if i := strings.IndexByte(tag, '['); i > 0 && tag[len(tag)-1] == ']' {
		tag = tag[:i]
	}
	if tag == "" || strings.ContainsAny(tag, ":[]") {
		return
	}
	l.Source, l.Message = tag, rest[sp+1:]
	if tag != SourceKernel || len(l.Message) < 3 || l.Message[0] != '[' {
		return
	}
	if end := strings.IndexByte(l.Message, ']'); end > 0 {
		if d, ok := parseSeconds(l.Message[1:end]); ok {
			l.Since, l.HasSince = d, true
			l.Message = strings.TrimPrefix(l.Message[end+1:], " ")
		}
	}
	l.Message = stripCaller(l.Message)
}
