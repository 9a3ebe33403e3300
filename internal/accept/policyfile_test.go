package accept

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const policyHeader = "apiVersion: gpunode.dev/v1alpha1\nkind: AcceptancePolicy\n"

func TestParsePolicyKeepsDefaultsAPartialFileDoesNotName(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		edit func(p *Policy)
	}{
		{"a file with only the header is the default policy", policyHeader, func(*Policy) {}},
		{"an empty mapping is the default policy", "{}\n", func(*Policy) {}},
		{"a file without the header is read on the defaults", "expect:\n  gpus: 8\n", func(p *Policy) { p.Expect.GPUs = 8 }},
		{"one expect field leaves the other expect fields at their defaults",
			policyHeader + "expect:\n  model: NVIDIA H100 80GB HBM3\n",
			func(p *Policy) { p.Expect.Model = "NVIDIA H100 80GB HBM3" }},
		{"one host field leaves the other host fields at their defaults",
			policyHeader + "host:\n  iommu: passthrough\n", func(p *Policy) { p.Host.IOMMU = "passthrough" }},
		{"one threshold leaves the ignored XIDs at their defaults",
			policyHeader + "thresholds:\n  maxPCIeReplays: 5\n", func(p *Policy) { p.Thresholds.MaxPCIeReplays = 5 }},
		{"an empty host section keeps every host default", policyHeader + "host:\n", func(*Policy) {}},
		{"a null boolean falls back to its default (required)", policyHeader + "expect:\n  ecc: null\n",
			func(p *Policy) { p.Expect.ECC = nil }},
		{"a trailing empty document is harmless", policyHeader + "name: x\n---\n", func(p *Policy) { p.Name = "x" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePolicy("p.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatalf("ParsePolicy: %v", err)
			}
			want := DefaultPolicy()
			tt.edit(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ParsePolicy =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// everyField sets every field of the policy to a value other than its default.
const everyField = policyHeader + `name: every-field
layers: [hardware]
expect:
  gpus: 8
  model: NVIDIA H100 80GB HBM3
  minMemoryMiB: 81000
  ecc: false
  persistenceMode: false
  mig: enabled
  nvlinksPerGPU: 18
  fabric: required
  pcieGen: 5
  pcieWidth: 16
versions:
  driver: [">=550.54,<600", "=580.95.05"]
  cuda: [">=12.4"]
  kernel: ["6.8", "=6.8.0-45-generic"]
  containerd: [">=1.7.20"]
thresholds:
  maxTemperatureC: 80
  maxPCIeReplays: 10
  maxCorrectedECC: 20
  maxRetiredPages: 30
  maxCorrectableRemappedRows: 40
  maxPowerPercent: 50
  correctedECCPerMinute: 60
  pcieReplaysPerMinute: 4
  ignoreXIDs: [13, 31]
  minPerformancePercent: 85
host:
  iommu: passthrough
  cgroupVersion: 1
  secureBoot: disabled
  smt: off
  minShmMiB: 4096
  minHugepages: 512
  minFreePercent: 20
  minFreeInodesPercent: 5
  cacheDirs: [/raid/models]
  timeSync: false
  nvidiaRuntime: required
  kubeletReservations: require
  gpuNUMALocal: false
`

func TestParsePolicySetsEveryField(t *testing.T) {
	got, err := ParsePolicy("every.yaml", []byte(everyField))
	if err != nil {
		t.Fatalf("ParsePolicy: %v", err)
	}
	no := boolPtr(false)
	want := Policy{
		APIVersion: PolicyAPIVersion, Kind: PolicyKind, Name: "every-field", Layers: []Layer{LayerHardware},
		Expect: Expect{GPUs: 8, Model: "NVIDIA H100 80GB HBM3", MinMemoryMiB: 81000, ECC: no, PersistenceMode: no,
			MIG: "enabled", NVLinksPerGPU: 18, Fabric: "required", PCIeGen: 5, PCIeWidth: 16},
		Versions: Versions{Driver: []string{">=550.54,<600", "=580.95.05"}, CUDA: []string{">=12.4"},
			Kernel: []string{"6.8", "=6.8.0-45-generic"}, Containerd: []string{">=1.7.20"}},
		Thresholds: Thresholds{MaxTemperatureC: 80, MaxPCIeReplays: 10, MaxCorrectedECC: 20, MaxRetiredPages: 30,
			MaxCorrectableRemappedRows: 40, MaxPowerPercent: 50, CorrectedECCPerMinute: 60, PCIeReplaysPerMinute: 4, IgnoreXIDs: []int{13, 31}, MinPerformancePercent: 85},
		Host: HostPolicy{IOMMU: "passthrough", CgroupVersion: 1, SecureBoot: "disabled", SMT: "off", MinShmMiB: 4096,
			MinHugepages: 512, MinFreePercent: 20, MinFreeInodesPercent: 5, CacheDirs: []string{"/raid/models"},
			TimeSync: no, NVIDIARuntime: "required", KubeletReservations: "require", GPUNUMALocal: no},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParsePolicy =\n%+v\nwant\n%+v", got, want)
	}
	// A field added to Policy but not to everyField would keep its default unnoticed.
	def := DefaultPolicy()
	for _, path := range sameLeaves(reflect.ValueOf(got), reflect.ValueOf(def), "") {
		if path != "APIVersion" && path != "Kind" {
			t.Errorf("field %s still has its default: add it to everyField", path)
		}
	}
}

// sameLeaves lists the leaf fields (not structs) whose values are equal in a and b.
func sameLeaves(a, b reflect.Value, prefix string) []string {
	if a.Kind() != reflect.Struct {
		if reflect.DeepEqual(a.Interface(), b.Interface()) {
			return []string{prefix}
		}
		return nil
	}
	var out []string
	for i := range a.NumField() {
		name := a.Type().Field(i).Name
		if prefix != "" {
			name = prefix + "." + name
		}
		out = append(out, sameLeaves(a.Field(i), b.Field(i), name)...)
	}
	return out
}

func TestParsePolicyNormalisesLayers(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []Layer
	}{
		{"a layer code is read as its layer", "layers: [L1]\n", []Layer{LayerHardware}},
		{"a lower-case layer code is read as its layer", "layers: [l0]\n", []Layer{LayerHost}},
		{"a layer name is kept", "layers: [hardware]\n", []Layer{LayerHardware}},
		{"names and codes mix, in the order given", "layers: [hardware, L0]\n", []Layer{LayerHardware, LayerHost}},
		{"no layers means every node-local layer", "name: x\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePolicy("p.yaml", []byte(policyHeader+tt.yaml))
			if err != nil {
				t.Fatalf("ParsePolicy: %v", err)
			}
			if !reflect.DeepEqual(p.Layers, tt.want) {
				t.Errorf("Layers = %q, want %q", p.Layers, tt.want)
			}
		})
	}
}

func TestParsePolicyErrorsNameFileAndLine(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		wantLine int
		wantText string
	}{
		{"a YAML syntax error names its line", policyHeader + "expect:\n  gpus: 8\n   model: x\n", 5, "mapping values are not allowed"},
		{"a YAML syntax error on the first line names line 1", "a: b: c\n", 1, "mapping values are not allowed"},
		{"a first-line-style error deep in a long file is still located", strings.Repeat("# padding\n", 3000) + "a: b: c\n", 3001, "mapping values are not allowed"},
		{"a tab used as indentation names its line", policyHeader + "expect:\n\tgpus: 8\n", 4, "cannot start any token"},
		{"an unterminated quote names the line it opens on", policyHeader + "name: \"x\n", 3, "unexpected end of stream"},
		{"an unknown anchor names its line", policyHeader + "expect: *nope\n", 3, "unknown anchor"},
		{"invalid UTF-8 names its line", policyHeader + "name: \xff\n", 3, "UTF-8"},
		{"an unknown top-level field names its line", policyHeader + "expekt:\n  gpus: 8\n", 3, `unknown field "expekt"`},
		{"an unknown nested field names its own line", "expect:\n  gpuz: 8\n", 2, `unknown field "gpuz"`},
		{"an unknown host field names its own line", policyHeader + "host:\n  iommu: any\n  smtt: on\n", 5, `unknown field "smtt"`},
		{"a duplicate key names its second line", "expect:\n  gpus: 8\n  gpus: 4\n", 3, `"gpus" already defined at line 2`},
		{"a word for a number is a wrong type", "expect:\n  gpus: eight\n", 2, "cannot unmarshal !!str `eight` into int"},
		{"a string for a list is a wrong type", "versions:\n  driver: \">=550\"\n", 2, "into []string"},
		{"a list for a section is a wrong type", "expect: [8]\n", 1, "into accept.Expect"},
		{"a negative size is a wrong type", "host:\n  minShmMiB: -1\n", 2, "into uint64"},
		{"a list for the whole file is a wrong type", "- expect\n", 1, "into accept.Policy"},
		{"an unknown MIG mode is rejected", "expect:\n  mig: sometimes\n", 2, `expect.mig: "sometimes" is not one of disabled, enabled, any`},
		{"an unknown fabric expectation is rejected", "expect:\n  fabric: maybe\n", 2, `expect.fabric: "maybe" is not one of auto, required, ignore`},
		{"an unknown IOMMU mode is rejected", "host:\n  iommu: on\n", 2, `host.iommu: "on" is not one of any, enabled, passthrough, disabled`},
		{"an unknown Secure Boot state is rejected", "host:\n  secureBoot: yes\n", 2, `host.secureBoot: "yes" is not one of any, enabled, disabled`},
		{"an unknown SMT state is rejected", "host:\n  smt: \"2\"\n", 2, `host.smt: "2" is not one of any, on, off`},
		{"an unknown NVIDIA runtime expectation is rejected", "host:\n  nvidiaRuntime: always\n", 2, `host.nvidiaRuntime: "always" is not one of auto, required, ignore`},
		{"an unknown kubelet reservations mode is rejected", "host:\n  kubeletReservations: strict\n", 2, `host.kubeletReservations: "strict" is not one of warn, require, ignore`},
		{"an empty enum is rejected", "expect:\n  mig: \"\"\n", 2, `expect.mig: "" is not one of`},
		{"cgroup version 3 is rejected", "host:\n  cgroupVersion: 3\n", 2, "host.cgroupVersion: 3 is not one of [0 1 2]"},
		{"a PCIe width of 12 is rejected", "expect:\n  pcieWidth: 12\n", 2, "expect.pcieWidth: 12 is not one of"},
		{"PCIe generation 7 is out of range", "expect:\n  pcieGen: 7\n", 2, "expect.pcieGen: must be between 0 and 6 (got 7)"},
		{"a negative PCIe generation is out of range", "expect:\n  pcieGen: -1\n", 2, "expect.pcieGen: must be between 0 and 6"},
		{"a power threshold of 0 percent is out of range", "thresholds:\n  maxPowerPercent: 0\n", 2, "thresholds.maxPowerPercent: must be between 1 and 100 (got 0)"},
		{"a power threshold above 100 percent is out of range", "thresholds:\n  maxPowerPercent: 101\n", 2, "thresholds.maxPowerPercent: must be between 1 and 100"},
		{"a free-space percentage above 100 is out of range", "host:\n  minFreePercent: 101\n", 2, "host.minFreePercent: must be between 0 and 100"},
		{"a free-inode percentage below 0 is out of range", "host:\n  minFreeInodesPercent: -1\n", 2, "host.minFreeInodesPercent: must be between 0 and 100"},
		{"a negative GPU count is rejected", "expect:\n  gpus: -8\n", 2, "expect.gpus: must not be negative"},
		{"a negative NVLink count is rejected", "expect:\n  nvlinksPerGPU: -1\n", 2, "expect.nvlinksPerGPU: must not be negative"},
		{"a negative temperature is rejected", "thresholds:\n  maxTemperatureC: -5\n", 2, "thresholds.maxTemperatureC: must not be negative"},
		{"a negative retired-page limit is rejected", "thresholds:\n  maxRetiredPages: -1\n", 2, "thresholds.maxRetiredPages: must not be negative"},
		{"a negative remapped-row limit is rejected", "thresholds:\n  maxCorrectableRemappedRows: -1\n", 2, "thresholds.maxCorrectableRemappedRows: must not be negative"},
		{"a negative hugepage count is rejected", "host:\n  minHugepages: -1\n", 2, "host.minHugepages: must not be negative"},
		{"a bad driver constraint names the line of versions.driver",
			policyHeader + "versions:\n  cuda: [\">=12.4\"]\n  driver:\n    - \">=550.54\"\n    - \">=abc\"\n", 5,
			`versions.driver: version constraint ">=abc": "abc" is not a dotted version number`},
		{"a bad kernel constraint names the line of versions.kernel", "versions:\n  kernel: [\">=6.8.0-45-generic\"]\n", 2, "versions.kernel: version constraint"},
		{"a bad CUDA constraint names the line of versions.cuda", "versions:\n  cuda: [\"\"]\n", 2, "versions.cuda: empty version constraint"},
		{"a bad containerd constraint names the line of versions.containerd", "versions:\n  containerd: [latest]\n", 2, "versions.containerd:"},
		{"a wrong apiVersion names its line", "apiVersion: gpunode.dev/v1\nkind: AcceptancePolicy\n", 1, `apiVersion: "gpunode.dev/v1" is not supported (want gpunode.dev/v1alpha1)`},
		{"a sim scenario given as a policy is a wrong apiVersion", "apiVersion: gpunode.dev/sim/v1\n", 1, `apiVersion: "gpunode.dev/sim/v1" is not supported`},
		{"a wrong kind names its line", "apiVersion: gpunode.dev/v1alpha1\nkind: GPUNodePolicy\n", 2, `kind: "GPUNodePolicy" is not supported (want AcceptancePolicy)`},
		{"an unknown layer names the line of layers", policyHeader + "layers:\n  - host\n  - gpu\n", 3, `layers: unknown layer "gpu"`},
		{"a layer that is not node-local is rejected", "layers: [L2]\n", 1, `unknown layer "L2"`},
		{"a layer given twice is rejected", "layers: [L1, hardware]\n", 1, `"hardware" names layer hardware (L1) a second time`},
		{"a second document is rejected", policyHeader + "name: a\n---\nname: b\n", 4, "more than one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePolicy("bad.yaml", []byte(tt.yaml))
			assertPolicyError(t, err, "bad.yaml", tt.wantLine, tt.wantText)
		})
	}
}

func TestParsePolicyRejectsAnEmptyFile(t *testing.T) {
	tests := []struct {
		name string
		yaml string
	}{
		{"a file with no bytes is empty", ""},
		{"a file of blank lines is empty", "  \n\n"},
		{"a file of comments only is empty", "# nothing here\n# yet\n"},
		{"a lone document marker is empty", "---\n"},
		{"an explicit null is empty", "~\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePolicy("empty.yaml", []byte(tt.yaml))
			assertPolicyError(t, err, "empty.yaml", 0, "file is empty")
		})
	}
}

// The validation order is fixed, so two bad constraints always report the same one.
func TestParsePolicyReportsTheSameOfTwoBadConstraints(t *testing.T) {
	in := []byte("versions:\n  containerd: [latest]\n  cuda: [newest]\n  kernel: [any]\n  driver: [best]\n")
	for range 20 {
		_, err := ParsePolicy("two.yaml", in)
		assertPolicyError(t, err, "two.yaml", 5, "versions.driver:")
	}
}

func TestLoadPolicy(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte(policyHeader+"name: from-disk\nexpect:\n  gpus: 8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(policyHeader+"expect:\n  gpuz: 8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("a valid file is read on the defaults", func(t *testing.T) {
		p, err := LoadPolicy(good)
		if err != nil {
			t.Fatalf("LoadPolicy: %v", err)
		}
		if p.Name != "from-disk" || p.Expect.GPUs != 8 || p.Host.MinShmMiB != 1024 {
			t.Errorf("LoadPolicy = name %q, gpus %d, minShmMiB %d; want from-disk, 8, 1024", p.Name, p.Expect.GPUs, p.Host.MinShmMiB)
		}
	})
	t.Run("an invalid file names its path and line", func(t *testing.T) {
		_, err := LoadPolicy(bad)
		assertPolicyError(t, err, bad, 4, `unknown field "gpuz"`)
	})
	t.Run("a missing file names its path", func(t *testing.T) {
		missing := filepath.Join(dir, "missing.yaml")
		_, err := LoadPolicy(missing)
		assertPolicyError(t, err, missing, 0, "cannot read: no such file or directory")
	})
	t.Run("a folder names its path", func(t *testing.T) {
		_, err := LoadPolicy(dir)
		assertPolicyError(t, err, dir, 0, "cannot read:")
	})
}

func assertPolicyError(t *testing.T, err error, file string, line int, text string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", text)
	}
	if !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("errors.Is(%v, ErrInvalidPolicy) = false", err)
	}
	var pe *PolicyError
	if !errors.As(err, &pe) {
		t.Fatalf("%v is not a *PolicyError", err)
	}
	if pe.File != file || pe.Line != line {
		t.Errorf("error at %s line %d, want %s line %d (%v)", pe.File, pe.Line, file, line, err)
	}
	if !strings.Contains(pe.Problem, text) {
		t.Errorf("problem %q, want it to contain %q", pe.Problem, text)
	}
	prefix := "policy " + file + ": "
	if line > 0 {
		prefix += "line " + strconv.Itoa(line) + ": "
	}
	if !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("error %q, want it to start with %q", err, prefix)
	}
}

func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(everyField))
	f.Add([]byte(policyHeader + "layers: [L1, host]\nversions:\n  kernel: [\"6.8\"]\n"))
	f.Add([]byte("expect:\n  gpuz: 8\n"))
	f.Add([]byte("a: b: c\n"))
	f.Add([]byte("expect: &a\n  gpus: 1\nhost: *a\n"))
	f.Add([]byte("name: a\n---\nname: b\n"))
	f.Add([]byte(""))
	if files, err := filepath.Glob(filepath.Join(examplePolicies, "*.yaml")); err == nil {
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("error %v is not ErrInvalidPolicy", err)
			}
			if !strings.HasPrefix(err.Error(), "policy fuzz.yaml: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		// What ParsePolicy accepts, the checks can use without further validation.
		if p.APIVersion != PolicyAPIVersion || p.Kind != PolicyKind {
			t.Errorf("accepted apiVersion %q kind %q", p.APIVersion, p.Kind)
		}
		seen := map[Layer]bool{}
		for _, l := range p.Layers {
			if (!slices.Contains(NodeLocalLayers, l) && !slices.Contains(OnDemandLayers, l)) || seen[l] {
				t.Errorf("accepted layers %q", p.Layers)
			}
			seen[l] = true
		}
		for _, cs := range [][]string{p.Versions.Driver, p.Versions.CUDA, p.Versions.Kernel, p.Versions.Containerd} {
			for _, c := range cs {
				if _, err := ParseConstraint(c); err != nil {
					t.Errorf("accepted constraint %q: %v", c, err)
				}
			}
		}
		if p.Thresholds.MaxPowerPercent < 1 || p.Thresholds.MaxPowerPercent > 100 || p.Host.MinHugepages < 0 ||
			p.Thresholds.MaxRetiredPages < 0 || p.Thresholds.MaxCorrectableRemappedRows < 0 {
			t.Errorf("accepted thresholds %+v, host %+v", p.Thresholds, p.Host)
		}
		// Parsing is deterministic.
		if again, err := ParsePolicy("fuzz.yaml", data); err != nil || !reflect.DeepEqual(again, p) {
			t.Errorf("a second parse gave %+v, %v", again, err)
		}
	})
}
