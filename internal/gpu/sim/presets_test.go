package sim

import (
	"context"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// fakeClock is a settable clock for fault timing.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func snapshot(t *testing.T, b *Backend) *gpu.Snapshot {
	t.Helper()
	s, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return s
}

func load(t *testing.T, presetOrFile string, opts ...Option) *Backend {
	t.Helper()
	b, err := Load(presetOrFile, opts...)
	if err != nil {
		t.Fatalf("Load(%q): %v", presetOrFile, err)
	}
	return b
}

var uuidPattern = regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestPresetsLookLikeNVMLReportsThem(t *testing.T) {
	cases := []struct {
		preset   string
		count    int
		name     string
		memMiB   uint64
		arch     string
		major    int
		linkGen  int
		nvlinks  int
		deviceID uint32
		limitW   float64
		fabric   string
	}{
		{"a100x8", 8, "NVIDIA A100-SXM4-80GB", 81920, "ampere", 8, 4, 12, 0x20B210DE, 400, "not-supported"},
		{"h100x8", 8, "NVIDIA H100 80GB HBM3", 81559, "hopper", 9, 5, 18, 0x233010DE, 700, "completed"},
		{"h200x8", 8, "NVIDIA H200", 143771, "hopper", 9, 5, 18, 0x233510DE, 700, "completed"},
		{"b200x8", 8, "NVIDIA B200", 183359, "blackwell", 10, 5, 18, 0x290110DE, 1000, "completed"},
		{"h200x1", 1, "NVIDIA H200", 143771, "hopper", 9, 5, 0, 0x233510DE, 700, "not-supported"},
	}
	for _, c := range cases {
		t.Run("preset "+c.preset+" has the model's facts", func(t *testing.T) {
			s := snapshot(t, load(t, c.preset))
			if s.Backend != "sim" || s.Driver.Vendor != "nvidia" || s.Driver.CUDAVersion != "13.0" {
				t.Errorf("snapshot header = %q %+v", s.Backend, s.Driver)
			}
			if len(s.Devices) != c.count {
				t.Fatalf("got %d GPUs, want %d", len(s.Devices), c.count)
			}
			serials := map[string]bool{}
			for i, d := range s.Devices {
				if d.Index != i || d.Name != c.name || d.Memory.TotalMiB != c.memMiB || d.Architecture != c.arch ||
					d.ComputeCapability.Major != c.major || d.PCI.DeviceID != c.deviceID {
					t.Errorf("GPU %d identity = %d %q %d %q %d %#x", i, d.Index, d.Name, d.Memory.TotalMiB, d.Architecture, d.ComputeCapability.Major, d.PCI.DeviceID)
				}
				if d.PCI.LinkGen != c.linkGen || d.PCI.LinkGenMax != c.linkGen || d.PCI.LinkWidth != 16 || d.PCI.LinkWidthMax != 16 {
					t.Errorf("GPU %d PCIe = %+v", i, d.PCI)
				}
				if len(d.NVLinks) != c.nvlinks || slices.ContainsFunc(d.NVLinks, func(l gpu.NVLink) bool { return !l.Active }) {
					t.Errorf("GPU %d NVLinks = %+v, want %d active", i, d.NVLinks, c.nvlinks)
				}
				if d.Power.LimitW != c.limitW || d.Power.DrawW < 70 || d.Power.DrawW > 120 {
					t.Errorf("GPU %d power = %+v", i, d.Power)
				}
				if d.Thermal.GPUC < 30 || d.Thermal.GPUC > 40 || d.Thermal.SlowdownC < 85 || d.Thermal.ShutdownC < d.Thermal.SlowdownC || d.Thermal.MaxOpC == 0 {
					t.Errorf("GPU %d thermal = %+v", i, d.Thermal)
				}
				if !d.ECC.Enabled || !d.PersistenceMode || !d.MIG.Capable || d.MIG.Enabled || d.RecoveryAction != gpu.RecoveryNone {
					t.Errorf("GPU %d modes: ecc %v persistence %v mig %+v recovery %q", i, d.ECC.Enabled, d.PersistenceMode, d.MIG, d.RecoveryAction)
				}
				if d.Fabric.State != c.fabric || (c.fabric == "completed" && (d.Fabric.Status != "success" || d.Fabric.CliqueID != 1 || d.Fabric.ClusterUUID == "")) {
					t.Errorf("GPU %d fabric = %+v", i, d.Fabric)
				}
				if !uuidPattern.MatchString(d.UUID) {
					t.Errorf("GPU %d UUID %q does not match GPU-8-4-4-4-12", i, d.UUID)
				}
				if !regexp.MustCompile(`^\d{13}$`).MatchString(d.Serial) || serials[d.Serial] {
					t.Errorf("GPU %d serial %q is not a unique 13-digit serial", i, d.Serial)
				}
				serials[d.Serial] = true
				if e := d.Err(gpu.FieldRetiredPages); e == nil || !e.NotSupported {
					t.Errorf("GPU %d retired pages error = %v, want not supported (Ampere and later)", i, e)
				}
			}
		})
	}
}

func TestEightGPUPresetsUseDGXBusIDsAndNUMANodes(t *testing.T) {
	want := []string{"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
		"00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0"}
	for _, p := range []string{"a100x8", "h100x8", "h200x8", "b200x8"} {
		s := snapshot(t, load(t, p))
		for i, d := range s.Devices {
			wantNUMA := 0
			if i >= 4 {
				wantNUMA = 1
			}
			if d.PCI.BusID != want[i] || d.NUMANode != wantNUMA {
				t.Errorf("%s GPU %d: bus %q numa %d, want %q %d", p, i, d.PCI.BusID, d.NUMANode, want[i], wantNUMA)
			}
		}
	}
}

func TestH200x1MirrorsTheLentMachine(t *testing.T) {
	s := snapshot(t, load(t, "h200x1"))
	d := s.Devices[0]
	if d.PCI.BusID != "00000000:00:06.0" || d.NUMANode != -1 || s.Driver.Version != "580.159.04" {
		t.Errorf("bus %q numa %d driver %q", d.PCI.BusID, d.NUMANode, s.Driver.Version)
	}
	if e := d.Err(gpu.FieldNVLink); e == nil || !e.NotSupported || len(d.NVLinks) != 0 {
		t.Errorf("NVLink = %+v, error %v; want none and not supported", d.NVLinks, e)
	}
}

func TestUUIDsAreUniqueDeterministicAndDifferBetweenPresets(t *testing.T) {
	seen := map[string]string{}
	for _, p := range Presets() {
		first := snapshot(t, load(t, p))
		second := snapshot(t, load(t, p))
		for i, d := range first.Devices {
			if second.Devices[i].UUID != d.UUID || second.Devices[i].Serial != d.Serial {
				t.Errorf("%s GPU %d: UUID %q then %q across loads", p, i, d.UUID, second.Devices[i].UUID)
			}
			if other, dup := seen[d.UUID]; dup {
				t.Errorf("%s GPU %d reuses UUID %q of %s", p, i, d.UUID, other)
			}
			seen[d.UUID] = p
		}
	}
}

func TestPresetsAreListedSortedAndUnknownOnesAreNamed(t *testing.T) {
	want := []string{"a100x8", "b200x8", "h100x8", "h200x1", "h200x8"}
	if got := Presets(); !slices.Equal(got, want) {
		t.Errorf("Presets() = %v, want %v", got, want)
	}
	_, err := Load("h300x8")
	if err == nil || !errorsIs(err, ErrInvalidScenario) || !contains(err.Error(), `"h300x8"`, "a100x8, b200x8, h100x8, h200x1, h200x8") {
		t.Errorf("Load(h300x8) error = %v", err)
	}
}

func TestReseedGivesDistinctIdentitiesPerSeed(t *testing.T) {
	a, _ := PresetScenario("h100x8")
	b, _ := PresetScenario("h100x8")
	base, _ := PresetScenario("h100x8")
	a.Reseed("node-a")
	b.Reseed("node-b")
	for i := range a.Devices {
		if a.Devices[i].UUID == b.Devices[i].UUID || a.Devices[i].UUID == base.Devices[i].UUID {
			t.Errorf("GPU %d: seeds give %q and %q (base %q)", i, a.Devices[i].UUID, b.Devices[i].UUID, base.Devices[i].UUID)
		}
		if !uuidPattern.MatchString(a.Devices[i].UUID) || len(a.Devices[i].Serial) != 13 {
			t.Errorf("GPU %d reseeded identity %q %q is malformed", i, a.Devices[i].UUID, a.Devices[i].Serial)
		}
	}
	again, _ := PresetScenario("h100x8")
	again.Reseed("node-a")
	if again.Devices[3].UUID != a.Devices[3].UUID {
		t.Errorf("same seed gave %q then %q", a.Devices[3].UUID, again.Devices[3].UUID)
	}
}
