package kmsg

import (
	"strings"
	"testing"
	"time"
)

const xid79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."

func TestParseTextLine(t *testing.T) {
	ref := time.Date(2025, 5, 20, 12, 0, 0, 0, time.UTC)
	at := func(y int, m time.Month, d, h, mi, s, ns int) time.Time {
		return time.Date(y, m, d, h, mi, s, ns, time.UTC)
	}
	since := func(s string) time.Duration { d, _ := time.ParseDuration(s); return d }
	kernel := func(f TextFormat, msg string) TextLine {
		return TextLine{Format: f, Source: SourceKernel, Facility: -1, Level: -1, Message: msg}
	}
	with := func(l TextLine, edit func(*TextLine)) TextLine { edit(&l); return l }
	cases := []struct {
		name string
		line string
		ref  time.Time
		want TextLine
	}{
		{"a dmesg line gives the time since boot", "[16450076.435595] " + xid79, ref,
			with(kernel(FormatDmesg, xid79), func(l *TextLine) { l.Since, l.HasSince = since("16450076.435595s"), true })},
		{"a space-padded dmesg stamp is read", "[    5.123456] nvidia: loading out-of-tree module", ref,
			with(kernel(FormatDmesg, "nvidia: loading out-of-tree module"), func(l *TextLine) { l.Since, l.HasSince = since("5.123456s"), true })},
		{"dmesg -r keeps the priority", "<4>[  123.000001] " + xid79, ref,
			with(kernel(FormatDmesg, xid79), func(l *TextLine) { l.Since, l.HasSince, l.Facility, l.Level = since("123.000001s"), true, 0, 4 })},
		{"the printk caller id is dropped", "[   12.345678] [T1234] " + xid79, ref,
			with(kernel(FormatDmesg, xid79), func(l *TextLine) { l.Since, l.HasSince = since("12.345678s"), true })},
		{"a dmesg message that looks like host and tag stays a message", "[    5.100000] e1000e eth0: NIC Link is Up", ref,
			with(kernel(FormatDmesg, "e1000e eth0: NIC Link is Up"), func(l *TextLine) { l.Since, l.HasSince = since("5.1s"), true })},
		{"a dmesg -T line gives the absolute time with its own year", "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:18:00 GPU-I:01 GPU-CI:00): 13, x", ref,
			with(kernel(FormatDmesgTime, "NVRM: Xid (PCI:0000:18:00 GPU-I:01 GPU-CI:00): 13, x"), func(l *TextLine) { l.Time = at(2025, 2, 23, 16, 24, 18, 0) })},
		{"a dmesg -T line with a one-digit day is read", "[Sun Feb  2 16:24:18 2025] m", ref,
			with(kernel(FormatDmesgTime, "m"), func(l *TextLine) { l.Time = at(2025, 2, 2, 16, 24, 18, 0) })},
		{"journald short-monotonic gives the host", "[16450076.435595] gpu-node-7 kernel: " + xid79, ref,
			with(kernel(FormatMonotonic, xid79), func(l *TextLine) {
				l.Since, l.HasSince, l.Host = since("16450076.435595s"), true, "gpu-node-7"
			})},
		{"a syslog line takes its year from the reference time", "May 18 19:02:39 gpu-node-7 kernel: " + xid79, ref,
			with(kernel(FormatSyslog, xid79), func(l *TextLine) { l.Time, l.Host = at(2025, 5, 18, 19, 2, 39, 0), "gpu-node-7" })},
		{"a December syslog line read in January is from the year before", "Dec 31 23:59:59 h kernel: m", at(2026, 1, 5, 0, 0, 0, 0),
			with(kernel(FormatSyslog, "m"), func(l *TextLine) { l.Time, l.Host = at(2025, 12, 31, 23, 59, 59, 0), "h" })},
		{"a syslog kernel line with the dmesg stamp gives both times", "May  8 19:02:39 h kernel: [16450076.435595] " + xid79, ref,
			with(kernel(FormatSyslog, xid79), func(l *TextLine) {
				l.Time, l.Host, l.Since, l.HasSince = at(2025, 5, 8, 19, 2, 39, 0), "h", since("16450076.435595s"), true
			})},
		{"a syslog line from another program is tagged with it", "May 18 19:02:39 h nvidia-persistenced[1234]: Started", ref,
			TextLine{Format: FormatSyslog, Time: at(2025, 5, 18, 19, 2, 39, 0), Host: "h", Source: "nvidia-persistenced", Facility: -1, Level: -1, Message: "Started"}},
		{"a syslog line without a tag keeps the rest as the message", "May 18 19:02:39 h message repeated 3 times", ref,
			TextLine{Format: FormatSyslog, Time: at(2025, 5, 18, 19, 2, 39, 0), Host: "h", Facility: -1, Level: -1, Message: "message repeated 3 times"}},
		{"a syslog line without a reference time has no time", "May 18 19:02:39 h kernel: m", time.Time{},
			with(kernel(FormatSyslog, "m"), func(l *TextLine) { l.Host = "h" })},
		{"journald short-precise keeps the microseconds", "May 18 19:02:39.123456 h kernel: m", ref,
			with(kernel(FormatSyslog, "m"), func(l *TextLine) { l.Time, l.Host = at(2025, 5, 18, 19, 2, 39, 123456000), "h" })},
		{"journald without the host name has only the tag", "May 18 19:02:39 kernel: m", ref,
			with(kernel(FormatSyslog, "m"), func(l *TextLine) { l.Time = at(2025, 5, 18, 19, 2, 39, 0) })},
		{"journald short-iso gives the time with its zone", "2025-05-18T19:02:39+0000 h kernel: " + xid79, ref,
			with(kernel(FormatISO, xid79), func(l *TextLine) { l.Time, l.Host = at(2025, 5, 18, 19, 2, 39, 0), "h" })},
		{"journald short-iso-precise with a colon in the zone", "2025-05-18T19:02:39.500000+02:00 h kernel: m", ref,
			with(kernel(FormatISO, "m"), func(l *TextLine) { l.Time, l.Host = at(2025, 5, 18, 17, 2, 39, 500000000), "h" })},
		{"an RFC 3339 time in UTC is read", "2025-05-18T19:02:39Z h kernel: m", ref,
			with(kernel(FormatISO, "m"), func(l *TextLine) { l.Time, l.Host = at(2025, 5, 18, 19, 2, 39, 0), "h" })},
		{"a saved /dev/kmsg record is read", "4,1234,5678,-;" + xid79, ref,
			with(kernel(FormatKmsg, xid79), func(l *TextLine) { l.Since, l.HasSince, l.Facility, l.Level = 5678*time.Microsecond, true, 0, 4 })},
		{"a saved record written from user space keeps facility 1", "11,358,90964842,-;" + xid79, ref,
			with(kernel(FormatKmsg, xid79), func(l *TextLine) {
				l.Since, l.HasSince, l.Facility, l.Level = 90964842*time.Microsecond, true, 1, 3
			})},
		{"a bare driver line is all message", "NVRM: GPU at PCI:0000:9b:00: GPU-5f8b2a3c", ref,
			TextLine{Format: FormatBare, Facility: -1, Level: -1, Message: "NVRM: GPU at PCI:0000:9b:00: GPU-5f8b2a3c"}},
		{"a bracketed message that is not a time stamp is bare", "[drm] Initialized nvidia-drm 0.0.0", ref,
			TextLine{Format: FormatBare, Facility: -1, Level: -1, Message: "[drm] Initialized nvidia-drm 0.0.0"}},
		{"a line that starts like a month but is not syslog is bare", "Mar is a month", ref,
			TextLine{Format: FormatBare, Facility: -1, Level: -1, Message: "Mar is a month"}},
		{"a line that starts with digits but is neither kmsg nor ISO is bare", "2025 was a year; really", ref,
			TextLine{Format: FormatBare, Facility: -1, Level: -1, Message: "2025 was a year; really"}},
		{"a CRLF line ending is dropped", "[1.000000] m\r\n", ref,
			with(kernel(FormatDmesg, "m"), func(l *TextLine) { l.Since, l.HasSince = time.Second, true })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseTextLine(tc.line, tc.ref)
			if !ok {
				t.Fatal("not parsed")
			}
			if !got.Time.Equal(tc.want.Time) {
				t.Errorf("time %v, want %v", got.Time, tc.want.Time)
			}
			got.Time, tc.want.Time = time.Time{}, time.Time{}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseTextLineRejectsOnlyEmptyLines(t *testing.T) {
	for _, line := range []string{"", "\n", "   \r\n"} {
		if l, ok := ParseTextLine(line, time.Time{}); ok {
			t.Errorf("%q parsed as %+v", line, l)
		}
	}
}

func TestParseTextLineGivesTheKernelVerdict(t *testing.T) {
	cases := []struct {
		name string
		line string
		want bool
	}{
		{"a dmesg line is from the kernel", "[1.0] m", true},
		{"a syslog kernel line is from the kernel", "May 18 19:02:39 h kernel: m", true},
		{"a kmsg record of facility 0 is from the kernel", "4,1,2,-;m", true},
		{"a kmsg record of facility 1 was written from user space", "11,1,2,-;m", false},
		{"a dmesg -r line of facility 1 was written from user space", "<11>[1.0] m", false},
		{"a syslog line of another program is not from the kernel", "May 18 19:02:39 h sshd[1]: m", false},
		{"a bare line is not known to be from the kernel", "m", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := ParseTextLine(tc.line, time.Time{})
			if got := l.FromKernel(); got != tc.want {
				t.Errorf("FromKernel = %v for %+v", got, l)
			}
		})
	}
}

func FuzzParseTextLine(f *testing.F) {
	for _, s := range []string{
		"[16450076.435595] " + xid79, "<4>[  1.000001] [T12] m", "[Sun Feb 23 16:24:18 2025] m",
		"May 18 19:02:39.123456 h kernel: [1.5] m", "2025-05-18T19:02:39.5+02:00 h kernel: m",
		"4,1234,5678,-;a\\x09b", "[1.0] h kernel: m", "Feb 29 00:00:00 h x[1]: m",
	} {
		f.Add(s)
	}
	ref := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, line string) {
		l, ok := ParseTextLine(line, ref)
		if ok != (strings.TrimSpace(line) != "") {
			t.Fatalf("ok = %v for %q", ok, line)
		}
		if !ok {
			return
		}
		if l.Format != FormatKmsg && !strings.Contains(line, l.Message) {
			t.Fatalf("message %q is not part of the line %q", l.Message, line)
		}
		if l.Level < -1 || l.Level > 7 || l.Facility < -1 || (l.Facility == -1) != (l.Level == -1) {
			t.Fatalf("facility %d level %d", l.Facility, l.Level)
		}
		if l.Since < 0 || (l.Since != 0 && !l.HasSince) {
			t.Fatalf("since %v (has %v)", l.Since, l.HasSince)
		}
		if !l.Time.IsZero() && (l.Time.Year() < 1 || l.Time.Year() > 9999) {
			t.Fatalf("time %v", l.Time)
		}
	})
}
