package xid

import "strings"

// classifySwitch recognises an NVSwitch error report:
//
//	nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)
//
// The driver prints lines around a report that repeat its code ("12028, Severity 0 Engine
// instance 46 Sub-engine instance 00" and "12028, Data {0x...}"); they belong to the report
// and are no event.
func classifySwitch(line string) (parsed, bool) {
	j := strings.Index(line, "SXid (")
	if j < 0 {
		return parsed{}, false
	}
	k := strings.LastIndex(line[:j], "nvidia-nvswitch")
	if k < 0 || !acceptPrefix(line[:k]) {
		return parsed{}, false
	}
	s := strings.TrimPrefix(line[j+len("SXid ("):], "PCI:")
	pci, ok := parsePCI(s)
	if !ok {
		return parsed{}, false
	}
	s, ok = strings.CutPrefix(s[pciLen(s):], "): ")
	if !ok {
		return parsed{}, false
	}
	code, n := leadingNumber(s, 6)
	if n == 0 {
		return parsed{}, false
	}
	msg := strings.TrimSpace(strings.TrimLeft(s[n:], ", "))
	if strings.HasPrefix(msg, "Severity ") || strings.HasPrefix(msg, "Data {") {
		return parsed{}, false
	}
	return parsed{kind: lineSXid, prefix: line[:k], body: line[k:], line: line,
		ev: Event{Kind: KindSXid, XID: code, PCI: pci, GPUInstance: -1, ComputeInstance: -1, Message: msg}}, true
}
