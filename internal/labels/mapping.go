package labels

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
)

// Mapping turns a GPU into its platform accelerator class. Rules are tried in order and
// the first that matches wins; then, unless NoDefaults, the built-in rules; then a
// class derived from the name and memory (DerivedClass), so the class label never
// disappears. The zero Mapping is the built-in defaults alone.
type Mapping struct {
	// Rules are the operator's rules, in order of precedence.
	Rules []Rule
	// NoDefaults drops the built-in rules (the mapping file's "defaults: false").
	NoDefaults bool
}

// Rule assigns Class to every GPU its Match matches.
type Rule struct {
	Match Match
	// Class is the accelerator-class value, a valid label value such as "h100-80g".
	Class string
	// Source says where the rule comes from: "file.yaml:12" or "builtin".
	Source string
}

// Match selects GPUs. Every field that is set must match; a Match with no field set
// matches nothing.
type Match struct {
	// Product is the exact name the vendor library reports, compared without regard to
	// case or surrounding spaces, e.g. "NVIDIA H100 80GB HBM3".
	Product string
	// ProductRegex matches the reported name (unanchored; write ^...$ to anchor).
	ProductRegex *regexp.Regexp
	// DeviceID is a PCI device id: 16 bits (0x2330) compare with the device part of the
	// device's combined id, 32 bits (0x233010DE) with all of it. 0 means unset.
	DeviceID uint32
}

// IsZero reports whether no field of the match is set.
func (m Match) IsZero() bool {
	return m.Product == "" && m.ProductRegex == nil && m.DeviceID == 0
}

// matches reports whether every set field of m matches the device.
func (m Match) matches(d *gpu.Device) bool {
	if m.IsZero() {
		return false
	}
	name, named := deviceName(d)
	if m.Product != "" && (!named || !strings.EqualFold(name, strings.TrimSpace(m.Product))) {
		return false
	}
	if m.ProductRegex != nil && (!named || !m.ProductRegex.MatchString(name)) {
		return false
	}
	if m.DeviceID != 0 {
		if !readable(d, gpu.FieldPCI) {
			return false
		}
		got := d.PCI.DeviceID
		if m.DeviceID <= 0xFFFF {
			got >>= 16
		}
		if got != m.DeviceID {
			return false
		}
	}
	return true
}

// Resolve returns the device's class and the rule that gave it, nil when the class was
// derived from the name and memory.
func (m Mapping) Resolve(d *gpu.Device) (string, *Rule) {
	for i := range m.Rules {
		if m.Rules[i].Match.matches(d) {
			return m.Rules[i].Class, &m.Rules[i]
		}
	}
	if !m.NoDefaults {
		for i := range defaultRules {
			if defaultRules[i].Match.matches(d) {
				r := defaultRules[i]
				return r.Class, &r
			}
		}
	}
	name, _ := deviceName(d)
	var mem uint64
	if readable(d, gpu.FieldMemory) {
		mem = d.Memory.TotalMiB
	}
	return DerivedClass(name, mem), nil
}

// Class returns the device's accelerator class.
func (m Mapping) Class(d *gpu.Device) string {
	class, _ := m.Resolve(d)
	return class
}

// defaultRules are the built-in classes: model and marketed memory in GB, the form factor
// (SXM, PCIe, NVL) left to the interconnect label.
var defaultRules = []Rule{
	builtin("NVIDIA A100-SXM4-40GB", "a100-40g"),
	builtin("NVIDIA A100-PCIE-40GB", "a100-40g"),
	builtin("NVIDIA A100-SXM4-80GB", "a100-80g"),
	builtin("NVIDIA A100 80GB PCIe", "a100-80g"),
	builtinRegex(`^NVIDIA A100[- ].*40GB`, "a100-40g"),
	builtinRegex(`^NVIDIA A100[- ].*80GB`, "a100-80g"),
	builtin("NVIDIA H100 80GB HBM3", "h100-80g"),
	builtin("NVIDIA H100 PCIe", "h100-80g"),
	builtin("NVIDIA H100 NVL", "h100-94g"),
	builtin("NVIDIA H200", "h200-141g"),
	builtin("NVIDIA H200 NVL", "h200-141g"),
	builtin("NVIDIA B200", "b200-180g"),
	builtin("NVIDIA GB200", "gb200-186g"),
	builtin("NVIDIA L40S", "l40s-48g"),
	builtin("NVIDIA L4", "l4-24g"),
}

func builtin(product, class string) Rule {
	return Rule{Match: Match{Product: product}, Class: class, Source: "builtin"}
}

func builtinRegex(expr, class string) Rule {
	return Rule{Match: Match{ProductRegex: regexp.MustCompile(expr)}, Class: class, Source: "builtin"}
}

// brandWords are dropped from a name before its model token is taken.
var brandWords = map[string]bool{
	"nvidia": true, "tesla": true, "geforce": true, "quadro": true, "grid": true,
	"amd": true, "instinct": true, "radeon": true, "intel": true,
}

// maxTokenLen bounds the model token so the class always fits in a label value.
const maxTokenLen = 40

// DerivedClass is the class of a GPU no rule matches: "<model token>-<memory GiB>g",
// e.g. "NVIDIA A10" with 23028 MiB -> "a10-22g". The model token is the lower-case name
// without brand words (NVIDIA, Tesla, GeForce, ...), taken up to and including its first
// part with a digit ("GeForce RTX 4090" -> "rtx4090"); memory is rounded to whole GiB
// and left off when unknown (0). An empty name gives the token "unknown".
func DerivedClass(name string, memMiB uint64) string {
	token := modelToken(name)
	if memMiB == 0 {
		return token
	}
	gib := memMiB / 1024
	if memMiB%1024 >= 512 {
		gib++
	}
	return token + "-" + strconv.FormatUint(gib, 10) + "g"
}

func modelToken(name string) string {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
	var kept []string
	for _, w := range words {
		if !brandWords[w] {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 {
		return "unknown"
	}
	token := kept[0]
	for i, w := range kept[:min(len(kept), 3)] {
		if strings.ContainsAny(w, "0123456789") {
			token = strings.Join(kept[:i+1], "")
			break
		}
	}
	if len(token) > maxTokenLen {
		token = token[:maxTokenLen]
	}
	return token
}
