package host

import (
	"io/fs"
	"strconv"
	"strings"
	"unicode"
)

// Boot is the kernel command line and what it and sysfs say about the IOMMU.
type Boot struct {
	// Cmdline is /proc/cmdline as read.
	Cmdline string `json:"cmdline,omitempty"`
	// Params are the kernel parameters in order (those after "--" go to init and are left out).
	Params []Param `json:"params,omitempty"`
	IOMMU  IOMMU   `json:"iommu"`
}

// Param is one kernel parameter: "key" or "key=value" (quotes removed).
type Param struct {
	Key      string `json:"key"`
	Value    string `json:"value,omitempty"`
	HasValue bool   `json:"hasValue,omitempty"`
}

// IOMMU modes.
const (
	IOMMUDisabled    = "disabled"
	IOMMUEnabled     = "enabled"     // DMA translation
	IOMMUPassthrough = "passthrough" // identity mapping for host devices (iommu=pt)
)

// IOMMU is the IOMMU as requested on the command line and as the kernel runs it.
type IOMMU struct {
	// Mode is the effective mode: IOMMUDisabled, IOMMUEnabled or IOMMUPassthrough; from
	// sysfs when readable, else from the command line; "" when neither tells.
	Mode string `json:"mode,omitempty"`
	// CmdlineMode is what the command line asks for ("" when it says nothing).
	CmdlineMode string `json:"cmdlineMode,omitempty"`
	// Params are the IOMMU parameters as given, e.g. ["intel_iommu=on", "iommu=pt"].
	Params []string `json:"params,omitempty"`
	// Units is the number of IOMMU units the kernel registered (/sys/class/iommu).
	Units int `json:"units"`
	// Groups is the number of IOMMU groups (/sys/kernel/iommu_groups).
	Groups int `json:"groups"`
	// DomainType is the default domain of the first group: "identity" (passthrough),
	// "DMA" or "DMA-FQ" (translated); "" when unknown.
	DomainType string `json:"domainType,omitempty"`
}

// Get returns the value of the last occurrence of a parameter; '-' and '_' in the key are
// the same, as in the kernel.
func (b Boot) Get(key string) (value string, ok bool) {
	key = normKey(key)
	for _, p := range b.Params {
		if normKey(p.Key) == key {
			value, ok = p.Value, true
		}
	}
	return value, ok
}

func normKey(k string) string { return strings.ReplaceAll(k, "-", "_") }

// readBoot reads /proc/cmdline and the IOMMU's sysfs state.
func (r *Reader) readBoot(f *Facts) {
	s, err := r.readString("/proc/cmdline")
	if err != nil {
		f.setErr(FactCmdline, err)
	}
	f.Boot.Cmdline = s
	f.Boot.Params = ParseCmdline(s)
	mmu := &f.Boot.IOMMU
	mmu.Params, mmu.CmdlineMode = iommuFromParams(f.Boot.Params)
	mmu.Mode = mmu.CmdlineMode
	units, err := r.readDir("/sys/class/iommu")
	if err != nil {
		f.setErr(FactIOMMUUnits, err)
		return
	}
	mmu.Units = len(units)
	if groups, gerr := r.readDir("/sys/kernel/iommu_groups"); gerr == nil {
		mmu.Groups = len(groups)
		if len(groups) > 0 {
			mmu.DomainType, _ = r.readString("/sys/kernel/iommu_groups/" + firstGroup(groups) + "/type")
		}
	}
	switch {
	case mmu.Units == 0:
		mmu.Mode = IOMMUDisabled
	case mmu.DomainType == "identity":
		mmu.Mode = IOMMUPassthrough
	case strings.HasPrefix(mmu.DomainType, "DMA"):
		mmu.Mode = IOMMUEnabled
	case mmu.CmdlineMode == IOMMUPassthrough:
		mmu.Mode = IOMMUPassthrough
	default:
		mmu.Mode = IOMMUEnabled
	}
}

// firstGroup returns the lowest-numbered group folder name.
func firstGroup(groups []fs.DirEntry) string {
	best, bestN := groups[0].Name(), -1
	for _, g := range groups {
		if n, err := strconv.Atoi(g.Name()); err == nil && (bestN < 0 || n < bestN) {
			best, bestN = g.Name(), n
		}
	}
	return best
}

// iommuFromParams returns the IOMMU parameters and the mode they ask for.
func iommuFromParams(params []Param) (raw []string, mode string) {
	for _, p := range params {
		k := normKey(p.Key)
		v := strings.ToLower(p.Value)
		switch k {
		case "intel_iommu", "amd_iommu":
			for _, opt := range strings.Split(v, ",") {
				switch opt {
				case "on", "force", "force_isolation":
					if mode != IOMMUPassthrough {
						mode = IOMMUEnabled
					}
				case "off":
					mode = IOMMUDisabled
				}
			}
		case "iommu":
			switch v {
			case "pt":
				mode = IOMMUPassthrough
			case "nopt", "on", "force":
				mode = IOMMUEnabled
			case "off":
				mode = IOMMUDisabled
			}
		case "iommu.passthrough":
			if b, ok := kernelBool(v); ok && b {
				mode = IOMMUPassthrough
			} else if ok {
				mode = IOMMUEnabled
			}
		default:
			continue
		}
		raw = append(raw, paramString(p))
	}
	return raw, mode
}

// kernelBool parses a boolean as the kernel's kstrtobool: y, 1, on are true; n, 0, off false.
func kernelBool(v string) (value, ok bool) {
	switch strings.ToLower(v) {
	case "y", "yes", "1", "on", "true":
		return true, true
	case "n", "no", "0", "off", "false":
		return false, true
	}
	return false, false
}

func paramString(p Param) string {
	if !p.HasValue {
		return p.Key
	}
	return p.Key + "=" + p.Value
}

// ParseCmdline splits a kernel command line as the kernel does (next_arg): parameters are
// separated by white space outside double quotes; a value's surrounding quotes are removed.
// Parsing stops at "--", after which the arguments belong to init.
func ParseCmdline(s string) []Param {
	var out []Param
	for _, tok := range splitCmdline(s) {
		if tok == "--" {
			break
		}
		if len(tok) >= 2 && tok[0] == '"' && tok[len(tok)-1] == '"' {
			tok = tok[1 : len(tok)-1]
		} else if tok[0] == '"' {
			tok = tok[1:]
		}
		k, v, ok := strings.Cut(tok, "=")
		if ok && len(v) > 0 && v[0] == '"' {
			v = strings.TrimSuffix(v[1:], `"`)
		}
		if k == "" {
			continue
		}
		out = append(out, Param{Key: k, Value: v, HasValue: ok})
	}
	return out
}

// splitCmdline splits at white space outside double quotes; quotes are kept.
func splitCmdline(s string) []string {
	var toks []string
	var cur strings.Builder
	inQuote := false
	flush := func() {
		if cur.Len() > 0 {
			toks = append(toks, cur.String())
			cur.Reset()
		}
	}
	for _, c := range s {
		switch {
		case c == '"':
			inQuote = !inQuote
			cur.WriteRune(c)
		case unicode.IsSpace(c) && !inQuote:
			flush()
		default:
			cur.WriteRune(c)
		}
	}
	flush()
	return toks
}
