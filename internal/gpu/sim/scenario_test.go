package sim

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// contains reports whether s holds every fragment.
func contains(s string, fragments ...string) bool {
	for _, f := range fragments {
		if !strings.Contains(s, f) {
			return false
		}
	}
	return true
}

func TestOverridesReplaceOnlyWhatTheyName(t *testing.T) {
	s := snapshot(t, load(t, "testdata/overrides.yaml"))
	if s.Driver.Version != "570.172.08" || s.Driver.LibraryVersion != "12.570.172.08" || s.Driver.CUDAVersion != "12.8" || s.Driver.Vendor != "nvidia" {
		t.Errorf("driver = %+v", s.Driver)
	}
	if len(s.Devices) != 10 {
		t.Fatalf("count 10 gave %d GPUs", len(s.Devices))
	}
	d := s.Devices[0]
	want := gpu.PCI{BusID: "00000000:19:00.0", DeviceID: 0x233010DE, SubsystemID: 0x16C110DE, LinkGen: 3, LinkGenMax: 5,
		LinkGenMaxDevice: 5, LinkWidth: 4, LinkWidthMax: 16, ReplayCounter: 77}
	if d.PCI != want {
		t.Errorf("pcie = %+v, want %+v", d.PCI, want)
	}
	if d.UUID != "GPU-00000000-1111-2222-3333-444444444444" || d.Name != "NVIDIA H100 80GB HBM3 (custom)" || d.Serial != "1650000000001" || d.VBIOS != "96.00.74.00.0D" {
		t.Errorf("identity = %q %q %q %q", d.UUID, d.Name, d.Serial, d.VBIOS)
	}
	if d.ECC != (gpu.ECC{Enabled: false, PendingEnabled: true, VolatileCorrected: 1, VolatileUncorrected: 2, AggregateCorrected: 3, AggregateUncorrected: 4}) {
		t.Errorf("ecc = %+v", d.ECC)
	}
	if d.RetiredPages != (gpu.RetiredPages{SingleBit: 1, DoubleBit: 2, Pending: true}) || d.Err(gpu.FieldRetiredPages) != nil {
		t.Errorf("retired pages = %+v, error %v", d.RetiredPages, d.Err(gpu.FieldRetiredPages))
	}
	if d.RowRemap != (gpu.RowRemap{Correctable: 5, Uncorrectable: 6, Pending: true, Failure: true}) {
		t.Errorf("row remap = %+v", d.RowRemap)
	}
	if d.Thermal != (gpu.Thermal{GPUC: 50, MemoryC: 55, SlowdownC: 88, ShutdownC: 93, MaxOpC: 86}) || d.Power != (gpu.Power{DrawW: 300.5, LimitW: 500, DefaultLimitW: 700}) {
		t.Errorf("thermal %+v power %+v", d.Thermal, d.Power)
	}
	if !slices.Equal(d.ClockEvents, []gpu.ClockEvent{gpu.ClockEventSWPowerCap, gpu.ClockEventHWSlowdown}) || d.PersistenceMode || !d.MIG.Enabled {
		t.Errorf("clock events %v persistence %v mig %+v", d.ClockEvents, d.PersistenceMode, d.MIG)
	}
	if !slices.Equal(d.NVLinks, []gpu.NVLink{{Link: 0, Active: true}, {Link: 1}, {Link: 2, Active: true}, {Link: 3}}) {
		t.Errorf("nvlinks = %+v", d.NVLinks)
	}
	if d.Fabric.State != "in-progress" || d.RecoveryAction != gpu.RecoveryDrainP2P || d.NUMANode != 3 || d.Memory.UsedMiB != 1024 {
		t.Errorf("fabric %+v recovery %q numa %d memory %+v", d.Fabric, d.RecoveryAction, d.NUMANode, d.Memory)
	}
	if e := d.Err(gpu.FieldPower); e == nil || e.NotSupported || e.Message != "simulated power sensor failure" {
		t.Errorf("power error = %v", e)
	}
	if e := d.Err(gpu.FieldVBIOS); e == nil || !e.NotSupported {
		t.Errorf("vbios error = %v", e)
	}
	if d1 := s.Devices[1]; d1.PCI.BusID != "00000000:2A:00.0" || d1.PCI.LinkGen != 5 || len(d1.NVLinks) != 18 {
		t.Errorf("GPU 1 was changed by GPU 0's overrides: %+v", d1.PCI)
	}
}

func TestCountAddsGPUsWithTheirOwnIdentityAndDropsThePresetsLast(t *testing.T) {
	s := snapshot(t, load(t, "testdata/overrides.yaml"))
	d8, d9 := s.Devices[8], s.Devices[9]
	if d8.Index != 8 || d8.PCI.BusID != "00000001:18:00.0" || d9.PCI.BusID != "00000001:2A:00.0" || d8.NUMANode != 0 {
		t.Errorf("added GPUs: %d %q numa %d; %q", d8.Index, d8.PCI.BusID, d8.NUMANode, d9.PCI.BusID)
	}
	if d8.UUID == s.Devices[0].UUID || !uuidPattern.MatchString(d8.UUID) || d8.Name != "NVIDIA H100 80GB HBM3" {
		t.Errorf("added GPU 8 identity %q %q", d8.UUID, d8.Name)
	}
	if e := d9.Err(gpu.FieldNVLink); len(d9.NVLinks) != 0 || e == nil || !e.NotSupported {
		t.Errorf("nvlinks count 0 gave %+v, error %v", d9.NVLinks, e)
	}
	sc, err := Parse("two.yaml", []byte("apiVersion: gpunode.dev/sim/v1\npreset: b200x8\ncount: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	base, _ := PresetScenario("b200x8")
	if len(sc.Devices) != 2 || sc.Devices[1].UUID != base.Devices[1].UUID {
		t.Errorf("count 2 kept %d GPUs, GPU 1 %q", len(sc.Devices), sc.Devices[1].UUID)
	}
}

func TestShippedScenariosParse(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.yaml")
	examples, _ := filepath.Glob("../../../examples/scenarios/*.yaml")
	if len(examples) < 4 || len(files) < 3 {
		t.Fatalf("found %d examples and %d testdata scenarios; the shipped files are missing", len(examples), len(files))
	}
	for _, f := range append(files, examples...) {
		t.Run(filepath.Base(f)+" loads", func(t *testing.T) {
			b := load(t, f)
			if len(snapshot(t, b).Devices) == 0 {
				t.Error("no GPUs")
			}
		})
	}
}

func TestLoadReadsAScenarioFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.yml")
	if err := os.WriteFile(path, []byte("apiVersion: gpunode.dev/sim/v1\npreset: h200x1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := load(t, path)
	if n := len(snapshot(t, b).Devices); n != 1 {
		t.Errorf("got %d GPUs", n)
	}
	missing := filepath.Join(dir, "missing.yaml")
	_, err := Load(missing)
	if err == nil || !contains(err.Error(), missing) || errorsIs(err, ErrInvalidScenario) {
		t.Errorf("missing file error = %v; want the name and not ErrInvalidScenario", err)
	}
}

func TestALooseFileNameWithYAMLExtensionIsAFileNotAPreset(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h100x8.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: gpunode.dev/sim/v1\npreset: a100x8\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if isPreset("h100x8.yaml") || isPreset("x/h100x8") || !isPreset("h100x8") {
		t.Error("isPreset misclassifies")
	}
	if name := snapshot(t, load(t, path)).Devices[0].Name; name != "NVIDIA A100-SXM4-80GB" {
		t.Errorf("loaded %q", name)
	}
}

func TestBadScenariosNameTheLineAndTheProblem(t *testing.T) {
	const head = "apiVersion: gpunode.dev/sim/v1\npreset: h100x8\n"
	cases := []struct {
		name string
		yaml string
		line int
		want []string
	}{
		{"an unknown top-level key is rejected", head + "gpuz: []\n", 3, []string{`unknown field "gpuz"`, "want one of: apiVersion"}},
		{"an unknown key inside a gpu override is rejected", head + "gpus:\n  - index: 1\n    pcie: {linkGenn: 4}\n", 5, []string{`unknown field "linkGenn" in gpus[0].pcie`}},
		{"an unknown fault type lists the known ones", head + "faults:\n  - at: 1s\n    gpu: 0\n    type: xidd\n", 6, []string{`unknown fault type "xidd"`, "xid, ecc-corrected", "kernel-log"}},
		{"a gpu override out of range says the size", head + "gpus:\n  - index: 9\n", 4, []string{"gpu index 9 out of range", "preset h100x8 has 8 GPUs"}},
		{"a fault gpu out of range says the count", head + "count: 2\nfaults:\n  - type: gpu-lost\n    gpu: 2\n", 6, []string{"gpu index 2 out of range", "count is 2"}},
		{"a bad duration is quoted", head + "faults:\n  - at: 30 seconds\n    gpu: 0\n    type: gpu-lost\n", 4, []string{`at "30 seconds" is not a duration`}},
		{"a negative time is rejected", head + "faults:\n  - at: -1s\n    gpu: 0\n    type: gpu-lost\n", 4, []string{"negative"}},
		{"a YAML syntax error keeps its line", head + "count: 2\ndriver: : 3\n", 4, []string{"mapping values are not allowed"}},
		{"a wrong value type is reported", head + "count: many\n", 3, []string{"cannot unmarshal", "many"}},
		{"a missing apiVersion is named", "preset: h100x8\n", 1, []string{"missing apiVersion"}},
		{"a wrong apiVersion is named", "apiVersion: v2\npreset: h100x8\n", 1, []string{`unsupported apiVersion "v2"`}},
		{"an unknown preset lists the known ones", "apiVersion: gpunode.dev/sim/v1\npreset: h300x8\n", 2, []string{`unknown preset "h300x8"`, "h200x1"}},
		{"a missing preset is named", "apiVersion: gpunode.dev/sim/v1\n", 1, []string{"missing preset"}},
		{"a fault without gpu is rejected", head + "faults:\n  - type: gpu-lost\n", 4, []string{"gpu-lost fault needs gpu"}},
		{"a field of another fault type is rejected", head + "faults:\n  - type: xid\n    gpu: 0\n    xid: 13\n    factor: 0.5\n", 7, []string{`field "factor" does not apply to a xid fault`}},
		{"an xid fault needs its code", head + "faults:\n  - type: xid\n    gpu: 0\n", 4, []string{"needs an xid code"}},
		{"a slow-compute factor above 1 is rejected", head + "faults:\n  - type: slow-compute\n    gpu: 0\n    factor: 1.5\n", 6, []string{"factor in (0, 1]"}},
		{"a missing NVLink is named", head + "faults:\n  - type: nvlink-down\n    gpu: 0\n    links: [18]\n", 6, []string{"no NVLink 18"}},
		{"nvlink-down on a GPU without NVLink is rejected", "apiVersion: gpunode.dev/sim/v1\npreset: h200x1\nfaults:\n  - type: nvlink-down\n    gpu: 0\n", 5, []string{"has no NVLinks"}},
		{"an unknown recovery action lists the known ones", head + "faults:\n  - type: recovery-action\n    gpu: 0\n    action: reboot\n", 6, []string{`unknown recovery action "reboot"`, "node-reboot"}},
		{"an xid 154 message without an action is rejected", head + "faults:\n  - type: xid\n    gpu: 0\n    xid: 154\n    message: something\n", 7, []string{"must name the new action"}},
		{"a kernel-log fault needs its line", head + "faults:\n  - type: kernel-log\n", 4, []string{"needs a message"}},
		{"a PCIe downgrade needs a value", head + "faults:\n  - type: pcie-downgrade\n    gpu: 1\n", 4, []string{"needs linkGen or linkWidth"}},
		{"a PCIe width must be a real width", head + "faults:\n  - type: pcie-downgrade\n    gpu: 1\n    linkWidth: 3\n", 6, []string{"not a PCIe width"}},
		{"a bad bus id in an override is rejected", head + "gpus:\n  - index: 0\n    pcie:\n      busId: 18:00.0\n", 6, []string{`busId "18:00.0"`}},
		{"a bad uuid in an override is rejected", head + "gpus:\n  - index: 0\n    uuid: GPU-1234\n", 5, []string{`uuid "GPU-1234"`}},
		{"an override without index is rejected", head + "gpus:\n  - name: x\n", 4, []string{"needs an index"}},
		{"a GPU overridden twice is rejected", head + "gpus:\n  - index: 1\n  - index: 1\n", 5, []string{"overridden twice", "line 4"}},
		{"an unknown clock event is rejected", head + "gpus:\n  - index: 1\n    clockEvents: [hot]\n", 5, []string{`unknown clock event "hot"`}},
		{"an unknown error field is rejected", head + "gpus:\n  - index: 1\n    errors:\n      temp: {}\n", 6, []string{`unknown field "temp" in errors`}},
		{"a duplicate key is rejected", head + "count: 2\ncount: 3\n", 4, []string{`field "count" given twice (first at line 3)`}},
		{"anchors are rejected", head + "gpus:\n  - &a {index: 1}\n", 4, []string{"anchors and aliases"}},
		{"a list where a mapping belongs is rejected", head + "driver: [1]\n", 3, []string{"driver must be a mapping"}},
		{"two documents are rejected", head + "---\npreset: a100x8\n", 3, []string{"only one YAML document"}},
		{"an empty file is rejected", "", 0, []string{"empty scenario"}},
		{"a scalar document is rejected", "h100x8\n", 1, []string{"must be a mapping"}},
		{"count above the limit is rejected", head + "count: 65\n", 3, []string{"count 65 out of range"}},
		{"a multi-line message is rejected", head + "faults:\n  - type: kernel-log\n    message: \"a\\nb\"\n", 5, []string{"single line"}},
		{"computeInstance without gpuInstance is rejected", head + "faults:\n  - {type: xid, gpu: 0, xid: 94, computeInstance: 1}\n", 4, []string{"computeInstance needs gpuInstance"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("examples/x.yaml", []byte(c.yaml))
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			var se *ScenarioError
			if !errors.As(err, &se) || !errors.Is(err, ErrInvalidScenario) {
				t.Fatalf("error %v (%T) is not a ScenarioError wrapping ErrInvalidScenario", err, err)
			}
			if se.Line != c.line || !contains(err.Error(), c.want...) || !strings.HasPrefix(err.Error(), "scenario examples/x.yaml: ") {
				t.Errorf("got %q (line %d), want line %d and %q", err, se.Line, c.line, c.want)
			}
		})
	}
}

func TestTheDocumentedFullExampleParses(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/sim-scenarios.md")
	if err != nil {
		t.Fatalf("the scenario documentation is missing: %v", err)
	}
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	example, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatal("docs/sim-scenarios.md has no yaml example")
	}
	s, err := Parse("docs/sim-scenarios.md", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Devices[3]; d.PCI.LinkGen != 4 || d.NVLinks[7].Active || d.Err(gpu.FieldVBIOS) == nil || len(s.Faults) != 1 {
		t.Errorf("example gave GPU 3 %+v, %d faults", d.PCI, len(s.Faults))
	}
}
