package xid

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/fault"
)

// bitClass is what the catalog's WORKFLOW_NVLINK_ERR says a set bit of XID 74 means.
type bitClass uint8

const (
	bitIgnorable   bitClass = iota // "can be safely ignored"
	bitThreshold                   // an ECC threshold exceeded, nothing uncorrectable: continue
	bitSympathetic                 // secondary to another XID/SXid
	bitRepeat                      // report a bug if seen repeatedly
	bitECC                         // likely an ECC/parity hardware issue
	bitHardware                    // possibly hardware: check connections, run diagnostics
	bitSI                          // marginal signal integrity: run field diagnostics
	bitDiag                        // repeated: run field diagnostics
	bitUnexpected                  // not expected in production
)

// bitRule is one sentence of the catalog's WORKFLOW_NVLINK_ERR: which bits of which of the
// seven words (0-based) mean what. The catalog gives this layout for Hopper (first, third,
// fourth and fifth words valid).
type bitRule struct {
	word  int
	bits  []int
	class bitClass
	text  string
}

var nvlink74Rules = []bitRule{
	{0, []int{0, 23, 30}, bitIgnorable, "can be safely ignored"},
	{0, []int{1, 20}, bitSympathetic, "generally secondary: follow the other XID/SXid; alone, report a bug"},
	{0, []int{4, 5}, bitECC, "likely an ECC/parity hardware issue: more than twice on the same link, report a bug"},
	{0, []int{8, 9, 12, 16, 17, 24, 28}, bitHardware, "possibly hardware: check and reseat the link's connections, run diagnostics if it persists"},
	{0, []int{21, 22}, bitSI, "marginal channel signal integrity: check the link's connections, run field diagnostics"},
	{0, []int{27, 29}, bitRepeat, "report a bug if seen repeatedly"},
	{2, []int{0, 1, 2, 6}, bitECC, "likely an ECC/parity hardware issue: more than twice on the same link, report a bug"},
	{2, []int{13}, bitUnexpected, "not expected in production: report a bug"},
	{2, []int{16, 19}, bitDiag, "if repeated, run field diagnostics and report a bug"},
	{2, []int{17, 18}, bitRepeat, "report a bug if seen repeatedly"},
	{3, []int{16, 17}, bitSympathetic, "generally secondary: follow the other XID/SXid; alone, report a bug"},
	{3, []int{18}, bitSympathetic, "secondary, but the fabric needs a reset: follow the other XID/SXid"},
	{4, []int{18, 19, 21, 22, 24, 25, 27, 28}, bitECC, "likely an ECC/parity hardware issue: more than twice on the same link, report a bug"},
	{4, []int{20, 23, 26, 29}, bitThreshold, "an ECC error threshold was exceeded, nothing uncorrectable: continue operation"},
}

// analyze74 explains every set bit of XID 74's words and sums up what they ask for.
func analyze74(words []uint32) (notes []string, benign, diagnose bool) {
	benign = true
	for w, v := range words {
		for bit := 0; bit < 32; bit++ {
			if v&(1<<bit) == 0 {
				continue
			}
			r, ok := ruleFor(w, bit)
			if !ok {
				notes = append(notes, fmt.Sprintf("word %d bit %d: not described by the catalog (Hopper layout); report a bug", w+1, bit))
				benign = false
				continue
			}
			notes = append(notes, fmt.Sprintf("word %d bit %d: %s", w+1, bit, r.text))
			benign = benign && (r.class == bitIgnorable || r.class == bitThreshold)
			diagnose = diagnose || r.class == bitSI // the only class whose advice is unconditional
		}
	}
	return notes, benign, diagnose
}

func ruleFor(word, bit int) (bitRule, bool) {
	for _, r := range nvlink74Rules {
		if r.word != word {
			continue
		}
		for _, b := range r.bits {
			if b == bit {
				return r, true
			}
		}
	}
	return bitRule{}, false
}

// decode74 reads "NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)".
func decode74(d *Decoded) {
	msg := d.Message
	d.Fatal = fatalWord(msg)
	if l, ok := linkAfter(msg, "link "); ok {
		d.Link = l
	}
	if i := strings.IndexByte(msg, '('); i >= 0 {
		d.Registers = hexWords(msg[i:])
	}
	notes, benign, diagnose := analyze74(d.Registers)
	d.RegisterNotes, d.RunDiagnostics = notes, diagnose
	where := linkName(d.Link)
	switch {
	case d.Fatal != nil && *d.Fatal:
		d.Severity, d.Action = fault.SeverityCritical, fault.ActionResetGPU
		d.Reason = "fatal NVLink error on " + where + ": reset the GPU; the remote end of the link may be at fault"
	case d.Fatal != nil && benign:
		d.Severity, d.Action = fault.SeverityWarning, fault.ActionNone
		d.Reason = "non-fatal NVLink error on " + where + " with only ignorable or ECC-threshold bits: continue"
	default:
		d.Reason = "NVLink error on " + where + ": reset the GPU; the remote end of the link may be at fault"
	}
}

// decode136 reads "NVLink: Link training failed for link 3(0x..., ...)".
func decode136(d *Decoded) {
	if l, ok := linkAfter(d.Message, "link "); ok {
		d.Link = l
	}
	if i := strings.IndexByte(d.Message, '('); i >= 0 {
		d.Registers = hexWords(d.Message[i:])
	}
	d.Reason = "NVLink training failed on " + linkName(d.Link) + ": reset the GPU; if it recurs, investigate the link's signal integrity"
}

// decodeNVLink5 reads the NVLink5 format of XIDs 144-150 and 155, confirmed in the open GPU
// kernel modules ("%s %s XC%01u i%01u Link %02d (0x%08x ...)"): unit, " Fatal  " or
// "Nonfatal", cross-contain and injected flags, link, then intrInfo, errorStatus and debug
// words (155: ": Link Down While Active." instead of words). A bracketed or spaced form
// ("XC 1 i 2 Link 01 [0x...]") is accepted too.
func decodeNVLink5(d *Decoded) {
	toks := strings.Fields(d.Message)
	sev := -1
	for i, t := range toks {
		switch strings.ToLower(t) {
		case "fatal":
			d.Fatal, sev = ptr(true), i
		case "nonfatal", "non-fatal":
			d.Fatal, sev = ptr(false), i
		}
		if sev >= 0 {
			break
		}
	}
	if sev < 0 {
		d.Reason = "the NVLink message says neither Fatal nor Nonfatal: treated as fatal, reset the GPU"
		return
	}
	d.Unit = strings.Join(toks[:sev], " ")
	rest := toks[sev+1:]
	for i := 0; i < len(rest); i++ {
		t := rest[i]
		switch {
		case strings.HasPrefix(t, "XC"):
			if v, ok := flagValue(t[2:], rest, &i); ok && v != 0 {
				d.RegisterNotes = append(d.RegisterNotes, "XC"+strconv.Itoa(v)+": cross-contained")
			}
		case strings.HasPrefix(t, "i") && t != "in":
			if v, ok := flagValue(t[1:], rest, &i); ok && v != 0 {
				d.RegisterNotes = append(d.RegisterNotes, "i"+strconv.Itoa(v)+": an injected error")
			}
		case t == "Link" && i+1 < len(rest):
			if l, err := strconv.Atoi(strings.TrimRight(rest[i+1], ":,")); err == nil {
				d.Link = l
			}
			d.Registers = hexWords(strings.Join(rest[i+1:], " "))
			i = len(rest)
		}
	}
	where := linkName(d.Link)
	switch {
	case *d.Fatal && d.XID == 149 && strings.HasPrefix(d.Unit, "NETIR_LINK"):
		d.Severity, d.Action, d.Drain = fault.SeverityCritical, fault.ActionResetGPU, true
		d.Reason = d.Unit + " link-fatal on " + where + ": drain, then reset the GPU; the peer device may be the source"
	case *d.Fatal:
		d.Severity, d.Action = fault.SeverityCritical, fault.ActionResetGPU
		d.Reason = d.Unit + " fatal on " + where + ": reset the GPU"
	default:
		d.Severity, d.Action = fault.SeverityWarning, fault.ActionNone
		d.Reason = d.Unit + " non-fatal on " + where + ": no action unless the driver raises XID 154"
	}
}

// flagValue reads an XC/i flag's digit, attached ("XC1") or the next token ("XC 1").
func flagValue(attached string, toks []string, i *int) (int, bool) {
	if attached == "" && *i+1 < len(toks) {
		*i++
		attached = toks[*i]
	}
	v, err := strconv.Atoi(attached)
	return v, err == nil
}

// fatalWord reads "fatal" / "non-fatal" in a message; nil when it has neither.
func fatalWord(msg string) *bool {
	l := strings.ToLower(msg)
	switch {
	case strings.Contains(l, "non-fatal"), strings.Contains(l, "nonfatal"):
		return ptr(false)
	case strings.Contains(l, "fatal"):
		return ptr(true)
	}
	return nil
}

// linkAfter finds the first "<word>N" (case-insensitive) followed by a decimal number.
func linkAfter(msg, word string) (int, bool) {
	l := strings.ToLower(msg)
	word = strings.ToLower(word)
	for off := 0; ; {
		i := strings.Index(l[off:], word)
		if i < 0 {
			return 0, false
		}
		s := msg[off+i+len(word):]
		neg := strings.HasPrefix(s, "-")
		v, n := leadingNumber(strings.TrimPrefix(s, "-"), 4)
		if n > 0 {
			after := strings.TrimPrefix(s, "-")[n:]
			if after == "" || !isHex(after[0]) && after[0] != 'x' {
				if neg {
					v = -v
				}
				return v, true
			}
		}
		off += i + len(word)
	}
}

func linkName(l int) string {
	if l < 0 {
		return "an unnamed link"
	}
	return fmt.Sprintf("link %d", l)
}

// hexWords reads every 0x-prefixed 32-bit word in s, in order (separators: spaces, commas,
// brackets).
func hexWords(s string) []uint32 {
	var out []uint32
	for _, f := range strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r == ',' || r == '(' || r == ')' || r == '[' || r == ']'
	}) {
		h, ok := strings.CutPrefix(strings.ToLower(f), "0x")
		if !ok || h == "" || len(h) > 8 || hexRun(h, 8) != len(h) {
			continue
		}
		v, err := strconv.ParseUint(h, 16, 32)
		if err == nil {
			out = append(out, uint32(v))
		}
	}
	return out
}
