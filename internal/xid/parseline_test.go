package xid

// ParseLine returns the GPU XID event in one kernel-log line, whatever its prefix
// (/dev/kmsg record, dmesg, dmesg -T, syslog or journald): an "Xid" report, MIG-attributed
// or not, or a fallen-off-the-bus message (XID 79, Derived). SXids, device-map lines and
// the three-line probe-time message need a Scanner.
func ParseLine(line string) (Event, bool) {
	l, ok := classify(line)
	if !ok || (l.kind != lineXID && l.kind != lineOffBus) {
		return Event{}, false
	}
	return l.event(), true
}
