package kmsg

import (
	"strings"
	"time"
)

// The time stamps of kernel-log text, parsed by hand: time.Parse would allocate and take
// several times longer, and a log flood must parse at hundreds of thousands of lines a
// second.

// minYear is the earliest year a kernel-log time stamp is believed: a machine whose clock
// was never set logs 1970.
const minYear = 1970

// digits parses a non-empty run of ASCII digits that fits in 18 digits.
func digits(s string) (uint64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

// parseSeconds parses dmesg's "    5.123456" (seconds since boot, space-padded, with a
// fraction of up to nine digits).
func parseSeconds(s string) (time.Duration, bool) {
	s = strings.TrimLeft(s, " ")
	whole, frac := s, ""
	if i := strings.IndexByte(s, '.'); i >= 0 {
		whole, frac = s[:i], s[i:]
	}
	sec, ok := digits(whole)
	if !ok || sec > uint64(time.Duration(1<<62)/time.Second) {
		return 0, false
	}
	ns, n := parseFraction(frac)
	if n != len(frac) {
		return 0, false
	}
	return time.Duration(sec)*time.Second + time.Duration(ns), true
}

// parseFraction parses a leading ".ddd" (up to nine digits count) and returns the
// nanoseconds and the bytes it used; no fraction uses nothing.
func parseFraction(s string) (ns, n int) {
	if len(s) < 2 || s[0] != '.' || s[1] < '0' || s[1] > '9' {
		return 0, 0
	}
	scale := 100000000
	n = 1
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		ns += int(s[n]-'0') * scale
		scale /= 10
		n++
	}
	return ns, n
}

// parseCtime parses "Sun Feb 23 16:24:18 2025" (the day may be space-padded).
func parseCtime(s string, loc *time.Location) (time.Time, bool) {
	if len(s) != 24 || s[3] != ' ' || s[7] != ' ' || s[10] != ' ' || s[19] != ' ' {
		return time.Time{}, false
	}
	mon, ok := parseMonth(s[4:7])
	day, ok2 := parseDay(s[8:10])
	h, m, sec, ok3 := parseClock(s[11:19])
	year, ok4 := digits(s[20:24])
	if !ok || !ok2 || !ok3 || !ok4 || year < minYear {
		return time.Time{}, false
	}
	return time.Date(int(year), mon, day, h, m, sec, 0, loc), true
}

// parseISOTime parses a leading "2025-05-18T19:02:39[.frac](Z|+hhmm|+hh:mm)"; zone-less
// times are read in loc. It returns the bytes used.
func parseISOTime(s string, loc *time.Location) (time.Time, int, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' {
		return time.Time{}, 0, false
	}
	year, ok := digits(s[:4])
	mon, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	h, m, sec, ok4 := parseClock(s[11:19])
	if !ok || !ok2 || !ok3 || !ok4 || year < minYear || mon < 1 || mon > 12 || day < 1 || day > 31 {
		return time.Time{}, 0, false
	}
	ns, n := parseFraction(s[19:])
	n += 19
	zone := s[n:]
	switch {
	case strings.HasPrefix(zone, "Z"):
		loc, n = time.UTC, n+1
	case len(zone) >= 5 && (zone[0] == '+' || zone[0] == '-'):
		zh, okh := digits(zone[1:3])
		mm := zone[3:5]
		used := 5
		if zone[3] == ':' && len(zone) >= 6 {
			mm, used = zone[4:6], 6
		}
		zm, okm := digits(mm)
		if !okh || !okm || zh > 23 || zm > 59 {
			return time.Time{}, 0, false
		}
		off := int(zh)*3600 + int(zm)*60
		if zone[0] == '-' {
			off = -off
		}
		loc, n = fixedZone(off), n+used
	}
	return time.Date(int(year), time.Month(mon), int(day), h, m, sec, ns, loc), n, true
}

// fixedZone returns a location for a UTC offset; UTC itself is shared, so the common
// case does not allocate.
func fixedZone(off int) *time.Location {
	if off == 0 {
		return time.UTC
	}
	return time.FixedZone("", off)
}

func parseMonth(s string) (time.Month, bool) {
	switch s {
	case "Jan":
		return time.January, true
	case "Feb":
		return time.February, true
	case "Mar":
		return time.March, true
	case "Apr":
		return time.April, true
	case "May":
		return time.May, true
	case "Jun":
		return time.June, true
	case "Jul":
		return time.July, true
	case "Aug":
		return time.August, true
	case "Sep":
		return time.September, true
	case "Oct":
		return time.October, true
	case "Nov":
		return time.November, true
	case "Dec":
		return time.December, true
	}
	return 0, false
}

// parseDay parses a two-character day of the month: " 8", "08" or "18".
func parseDay(s string) (int, bool) {
	d, ok := digits(strings.TrimPrefix(s, " "))
	if !ok || d < 1 || d > 31 {
		return 0, false
	}
	return int(d), true
}

// parseClock parses "19:02:39".
func parseClock(s string) (h, m, sec int, ok bool) {
	if len(s) != 8 || s[2] != ':' || s[5] != ':' {
		return 0, 0, 0, false
	}
	hh, ok1 := digits(s[:2])
	mm, ok2 := digits(s[3:5])
	ss, ok3 := digits(s[6:8])
	if !ok1 || !ok2 || !ok3 || hh > 23 || mm > 59 || ss > 60 {
		return 0, 0, 0, false
	}
	return int(hh), int(mm), int(ss), true
}
