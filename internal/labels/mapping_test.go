package labels

import (
	"regexp"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
)

func device(name string, memMiB uint64, deviceID uint32) *gpu.Device {
	return &gpu.Device{Name: name, Memory: gpu.Memory{TotalMiB: memMiB}, PCI: gpu.PCI{DeviceID: deviceID}}
}

func TestDefaultMappingCoversKnownModels(t *testing.T) {
	tests := []struct {
		name    string
		product string
		memMiB  uint64
		want    string
	}{
		{"A100 SXM 40GB is a100-40g", "NVIDIA A100-SXM4-40GB", 40960, "a100-40g"},
		{"A100 PCIe 40GB is a100-40g", "NVIDIA A100-PCIE-40GB", 40960, "a100-40g"},
		{"A100 SXM 80GB is a100-80g", "NVIDIA A100-SXM4-80GB", 81920, "a100-80g"},
		{"A100 PCIe 80GB is a100-80g", "NVIDIA A100 80GB PCIe", 81920, "a100-80g"},
		{"an A100 80GB name variant is caught by the pattern", "NVIDIA A100-SXM-80GB", 81920, "a100-80g"},
		{"an A100 40GB name variant is caught by the pattern", "NVIDIA A100-SXM4-40GB-LC", 40960, "a100-40g"},
		{"H100 SXM is h100-80g", "NVIDIA H100 80GB HBM3", 81559, "h100-80g"},
		{"H100 PCIe is h100-80g", "NVIDIA H100 PCIe", 81559, "h100-80g"},
		{"H100 NVL is h100-94g", "NVIDIA H100 NVL", 95830, "h100-94g"},
		{"H200 is h200-141g", "NVIDIA H200", 143771, "h200-141g"},
		{"H200 NVL is h200-141g", "NVIDIA H200 NVL", 143771, "h200-141g"},
		{"B200 is b200-180g", "NVIDIA B200", 183359, "b200-180g"},
		{"GB200 is gb200-186g", "NVIDIA GB200", 189471, "gb200-186g"},
		{"L40S is l40s-48g", "NVIDIA L40S", 46068, "l40s-48g"},
		{"L4 is l4-24g", "NVIDIA L4", 23034, "l4-24g"},
		{"a product is matched regardless of case and spaces", "  nvidia h200 ", 143771, "h200-141g"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class, rule := Mapping{}.Resolve(device(tt.product, tt.memMiB, 0))
			if class != tt.want {
				t.Errorf("class of %q = %q, want %q", tt.product, class, tt.want)
			}
			if rule == nil || rule.Source != "builtin" {
				t.Errorf("class of %q came from %+v, want a builtin rule", tt.product, rule)
			}
		})
	}
}

func TestDerivedClassForUnmatchedGPUs(t *testing.T) {
	tests := []struct {
		name    string
		product string
		memMiB  uint64
		want    string
	}{
		{"an A10 is its model and rounded memory", "NVIDIA A10", 23028, "a10-22g"},
		{"a Tesla V100 drops the brand word", "Tesla V100-SXM2-16GB", 16384, "v100-16g"},
		{"a GeForce card keeps the series with the number", "NVIDIA GeForce RTX 4090", 24564, "rtx4090-24g"},
		{"an RTX PRO card joins words up to the number", "NVIDIA RTX PRO 6000 Blackwell Server Edition", 97887, "rtxpro6000-96g"},
		{"another vendor's name works the same way", "AMD Instinct MI300X", 196592, "mi300x-192g"},
		{"a name without digits uses its first word", "NVIDIA Mystery Board", 8192, "mystery-8g"},
		{"half a GiB rounds up", "NVIDIA X1", 1536, "x1-2g"},
		{"unknown memory leaves the size off", "NVIDIA H20", 0, "h20"},
		{"an empty name is unknown", "", 8192, "unknown-8g"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DerivedClass(tt.product, tt.memMiB); got != tt.want {
				t.Errorf("DerivedClass(%q, %d) = %q, want %q", tt.product, tt.memMiB, got, tt.want)
			}
			class, rule := Mapping{}.Resolve(device(tt.product, tt.memMiB, 0))
			if tt.product != "" && (class != tt.want || rule != nil) {
				t.Errorf("Resolve(%q) = %q from %+v, want derived %q", tt.product, class, rule, tt.want)
			}
		})
	}
}

func TestMappingPrecedence(t *testing.T) {
	h100 := device("NVIDIA H100 80GB HBM3", 81559, 0x233010DE)
	tests := []struct {
		name string
		m    Mapping
		d    *gpu.Device
		want string
	}{
		{"a user rule overrides the default for the same product",
			Mapping{Rules: []Rule{{Match: Match{Product: "NVIDIA H100 80GB HBM3"}, Class: "h100-sxm"}}}, h100, "h100-sxm"},
		{"the first matching user rule wins",
			Mapping{Rules: []Rule{
				{Match: Match{ProductRegex: regexp.MustCompile(`^NVIDIA H100`)}, Class: "hopper-any"},
				{Match: Match{Product: "NVIDIA H100 80GB HBM3"}, Class: "h100-sxm"},
			}}, h100, "hopper-any"},
		{"a 16-bit device id matches the device part",
			Mapping{Rules: []Rule{{Match: Match{DeviceID: 0x2330}, Class: "by-id"}}}, h100, "by-id"},
		{"a 32-bit device id matches the combined id",
			Mapping{Rules: []Rule{{Match: Match{DeviceID: 0x233010DE}, Class: "by-full-id"}}}, h100, "by-full-id"},
		{"another device id falls through to the default",
			Mapping{Rules: []Rule{{Match: Match{DeviceID: 0x2331}, Class: "pcie"}}}, h100, "h100-80g"},
		{"all fields of a match must agree",
			Mapping{Rules: []Rule{{Match: Match{Product: "NVIDIA H100 80GB HBM3", DeviceID: 0x2331}, Class: "never"}}}, h100, "h100-80g"},
		{"an empty match matches nothing",
			Mapping{Rules: []Rule{{Class: "everything"}}}, h100, "h100-80g"},
		{"without defaults an unmatched GPU gets the derived class",
			Mapping{NoDefaults: true}, device("NVIDIA H200", 143771, 0), "h200-140g"},
		{"a user rule extends the defaults with a new model",
			Mapping{Rules: []Rule{{Match: Match{Product: "NVIDIA H20"}, Class: "h20-96g"}}}, device("NVIDIA H20", 97871, 0), "h20-96g"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.Class(tt.d); got != tt.want {
				t.Errorf("Class = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDeviceIDRuleNeedsAReadablePCIID(t *testing.T) {
	d := device("NVIDIA H100 80GB HBM3", 81559, 0x233010DE)
	d.SetErr(gpu.FieldPCI, errReadFailed)
	m := Mapping{Rules: []Rule{{Match: Match{DeviceID: 0x2330}, Class: "by-id"}}}
	if got := m.Class(d); got != "h100-80g" {
		t.Errorf("Class = %q, want the default h100-80g when the PCI id could not be read", got)
	}
}
