package health

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/rules"
)

// healthyDevice is a busy H100 on which FromSnapshot finds nothing.
func healthyDevice(i int) gpu.Device {
	d := gpu.Device{
		Index: i, UUID: fmt.Sprintf("GPU-%d", i), Name: "NVIDIA H100 80GB HBM3",
		PCI:            gpu.PCI{BusID: fmt.Sprintf("00000000:%02X:00.0", 0x18+i), LinkGen: 5, LinkGenMax: 5, LinkWidth: 16, LinkWidthMax: 16},
		ECC:            gpu.ECC{Enabled: true, PendingEnabled: true},
		ClockEvents:    []gpu.ClockEvent{gpu.ClockEventSWPowerCap},
		Fabric:         gpu.Fabric{State: "completed", Status: "success", CliqueID: 1},
		RecoveryAction: gpu.RecoveryNone,
	}
	for l := range 18 {
		d.NVLinks = append(d.NVLinks, gpu.NVLink{Link: l, Active: true})
	}
	return d
}

func snapshotAt(t time.Time, mutate func(d *gpu.Device)) *gpu.Snapshot {
	s := &gpu.Snapshot{Backend: "test", Time: t, Devices: []gpu.Device{healthyDevice(0), healthyDevice(1)}}
	if mutate != nil {
		mutate(&s.Devices[0])
	}
	return s
}

func lostErr(d *gpu.Device, f gpu.Field) {
	d.SetErr(f, fmt.Errorf("GPU %d: %w", d.Index, gpu.ErrGPULost))
}

// render is "index cause component/severity/action" per finding.
func render(fs []Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%d %s %s/%s/%s", f.GPUIndex, f.Cause, f.Component, f.Severity, f.Action))
	}
	return strings.Join(out, "; ")
}

func TestFromSnapshot(t *testing.T) {
	tests := []struct {
		name     string
		noPrev   bool
		interval time.Duration // 10 s when 0
		prev     func(d *gpu.Device)
		cur      func(d *gpu.Device)
		want     string
	}{
		{name: "a healthy GPU has no findings", want: ""},
		{name: "new uncorrected ECC errors require a GPU reset, and the lifetime count is history",
			cur:  func(d *gpu.Device) { d.ECC.VolatileUncorrected, d.ECC.AggregateUncorrected = 2, 2 },
			want: "0 ecc-uncorrected memory/critical/reset-gpu; 0 ecc-uncorrected-aggregate memory/info/none"},
		{name: "uncorrected ECC errors found on the first poll require a GPU reset", noPrev: true,
			cur:  func(d *gpu.Device) { d.ECC.VolatileUncorrected = 3 },
			want: "0 ecc-uncorrected memory/critical/reset-gpu"},
		{name: "uncorrected ECC errors that did not grow are not reported again",
			prev: func(d *gpu.Device) { d.ECC.VolatileUncorrected, d.ECC.AggregateUncorrected = 3, 3 },
			cur:  func(d *gpu.Device) { d.ECC.VolatileUncorrected, d.ECC.AggregateUncorrected = 3, 3 },
			want: ""},
		{name: "a volatile counter that went down was reset, and what it holds is new",
			prev: func(d *gpu.Device) { d.ECC.VolatileUncorrected, d.ECC.AggregateUncorrected = 5, 5 },
			cur:  func(d *gpu.Device) { d.ECC.VolatileUncorrected, d.ECC.AggregateUncorrected = 1, 6 },
			want: "0 ecc-uncorrected memory/warning/restart-app; 0 ecc-uncorrected-aggregate memory/info/none"},
		{name: "one uncorrected ECC error since the reset was contained: restart the application, the GPU stays in service", noPrev: true,
			cur:  func(d *gpu.Device) { d.ECC.VolatileUncorrected, d.ECC.AggregateUncorrected = 1, 1 },
			want: "0 ecc-uncorrected memory/warning/restart-app; 0 ecc-uncorrected-aggregate memory/info/none"},
		{name: "a second uncorrected ECC error since the reset means the containment does not hold: reset the GPU",
			prev: func(d *gpu.Device) { d.ECC.VolatileUncorrected, d.ECC.AggregateUncorrected = 1, 1 },
			cur:  func(d *gpu.Device) { d.ECC.VolatileUncorrected, d.ECC.AggregateUncorrected = 2, 2 },
			want: "0 ecc-uncorrected memory/critical/reset-gpu; 0 ecc-uncorrected-aggregate memory/info/none"},
		{name: "lifetime uncorrected errors alone are history, not a fault", noPrev: true,
			cur:  func(d *gpu.Device) { d.ECC.AggregateUncorrected = 4 },
			want: "0 ecc-uncorrected-aggregate memory/info/none"},
		{name: "corrected ECC errors faster than 100 a minute warn",
			cur:  func(d *gpu.Device) { d.ECC.VolatileCorrected = 101 },
			want: "0 ecc-corrected-rate memory/warning/none"},
		{name: "100 corrected ECC errors in 10 seconds do not warn",
			cur: func(d *gpu.Device) { d.ECC.VolatileCorrected = 100 }, want: ""},
		{name: "corrected ECC errors over ten minutes are judged per minute and 900 do not warn", interval: 10 * time.Minute,
			cur: func(d *gpu.Device) { d.ECC.VolatileCorrected = 900 }, want: ""},
		{name: "corrected ECC errors over ten minutes are judged per minute and 1001 warn", interval: 10 * time.Minute,
			cur: func(d *gpu.Device) { d.ECC.VolatileCorrected = 1001 }, want: "0 ecc-corrected-limit memory/warning/none; 0 ecc-corrected-rate memory/warning/none"},
		{name: "corrected ECC errors are not rated on the first poll, only held to the limit since the reset", noPrev: true,
			cur: func(d *gpu.Device) { d.ECC.VolatileCorrected = 1_000_000 }, want: "0 ecc-corrected-limit memory/warning/none"},
		{name: "1000 corrected ECC errors since the reset are within the limit", noPrev: true,
			cur: func(d *gpu.Device) { d.ECC.VolatileCorrected = 1000 }, want: ""},
		{name: "rates are not judged when the snapshots are out of order, only the limits since the reset", interval: -time.Minute,
			cur:  func(d *gpu.Device) { d.ECC.VolatileCorrected, d.PCI.ReplayCounter = 1_000_000, 1_000_000 },
			want: "0 ecc-corrected-limit memory/warning/none; 0 pcie-replay-limit pcie/warning/none"},
		{name: "more correctable remapped rows than 512 warn",
			cur:  func(d *gpu.Device) { d.RowRemap.Correctable = 513 },
			want: "0 row-remap-correctable memory/warning/none"},
		{name: "a pending row remap requires a GPU reset",
			cur:  func(d *gpu.Device) { d.RowRemap.Pending = true },
			want: "0 row-remap-pending memory/critical/reset-gpu"},
		{name: "a failed row remap needs service",
			cur:  func(d *gpu.Device) { d.RowRemap.Failure = true },
			want: "0 row-remap-failure memory/fatal/service"},
		{name: "a pending page retirement requires a GPU reset",
			cur:  func(d *gpu.Device) { d.RetiredPages.Pending = true },
			want: "0 retired-pages-pending memory/critical/reset-gpu"},
		{name: "more retired pages than 60 need service",
			cur:  func(d *gpu.Device) { d.RetiredPages.SingleBit, d.RetiredPages.DoubleBit = 50, 11 },
			want: "0 retired-pages-limit memory/critical/service"},
		{name: "60 retired pages are within the limit",
			cur: func(d *gpu.Device) { d.RetiredPages.SingleBit = 60 }, want: ""},
		{name: "PCIe replays faster than 8 a minute warn",
			prev: func(d *gpu.Device) { d.PCI.ReplayCounter = 50 },
			cur:  func(d *gpu.Device) { d.PCI.ReplayCounter = 59 },
			want: "0 pcie-replay-rate pcie/warning/none"},
		{name: "8 PCIe replays in 10 seconds do not warn",
			cur: func(d *gpu.Device) { d.PCI.ReplayCounter = 8 }, want: ""},
		{name: "PCIe replays are not rated without a previous snapshot, only held to the limit since driver load", noPrev: true,
			cur: func(d *gpu.Device) { d.PCI.ReplayCounter = 5000 }, want: "0 pcie-replay-limit pcie/warning/none"},
		{name: "a PCIe link narrower than its maximum is critical and requires a reset",
			cur:  func(d *gpu.Device) { d.PCI.LinkWidth = 8 },
			want: "0 pcie-link-width pcie/critical/reset-gpu"},
		{name: "a busy GPU on a lower PCIe generation warns",
			cur:  func(d *gpu.Device) { d.PCI.LinkGen = 3 },
			want: "0 pcie-link-gen pcie/warning/none"},
		{name: "an idle GPU on a lower PCIe generation is not judged, it trains down to save power",
			cur: func(d *gpu.Device) { d.PCI.LinkGen, d.ClockEvents = 1, []gpu.ClockEvent{gpu.ClockEventIdle} }, want: ""},
		{name: "a lower PCIe generation is not judged when the clock events are unreadable",
			cur: func(d *gpu.Device) { d.PCI.LinkGen = 1; d.SetErr(gpu.FieldClockEvents, gpu.ErrNotSupported) }, want: ""},
		{name: "a down NVLink requires draining peer-to-peer work",
			cur:  func(d *gpu.Device) { d.NVLinks[7].Active = false },
			want: "0 nvlink-down-7 interconnect/critical/drain-p2p"},
		{name: "a hardware thermal slowdown warns",
			cur: func(d *gpu.Device) {
				d.ClockEvents = []gpu.ClockEvent{gpu.ClockEventHWSlowdown, gpu.ClockEventHWThermal}
			},
			want: "0 clock-hw-slowdown gpu/warning/none; 0 clock-hw-thermal-slowdown gpu/warning/none"},
		{name: "a software thermal slowdown warns",
			cur:  func(d *gpu.Device) { d.ClockEvents = []gpu.ClockEvent{gpu.ClockEventSWThermal} },
			want: "0 clock-sw-thermal-slowdown gpu/warning/none"},
		{name: "a power brake warns",
			cur:  func(d *gpu.Device) { d.ClockEvents = []gpu.ClockEvent{gpu.ClockEventHWPowerBrake} },
			want: "0 clock-hw-power-brake-slowdown gpu/warning/none"},
		{name: "benign clock events are not findings",
			cur: func(d *gpu.Device) {
				d.ClockEvents = []gpu.ClockEvent{gpu.ClockEventIdle, gpu.ClockEventSWPowerCap, gpu.ClockEventSyncBoost, gpu.ClockEventAppSetting}
			}, want: ""},
		{name: "a recovery action of GPU reset requires a GPU reset",
			cur:  func(d *gpu.Device) { d.RecoveryAction = gpu.RecoveryGPUReset },
			want: "0 recovery-action gpu/critical/reset-gpu"},
		{name: "a recovery action of node reboot requires a node reboot",
			cur:  func(d *gpu.Device) { d.RecoveryAction = gpu.RecoveryNodeReboot },
			want: "0 recovery-action gpu/critical/reboot-node"},
		{name: "a recovery action of drain P2P requires draining peer-to-peer work",
			cur:  func(d *gpu.Device) { d.RecoveryAction = gpu.RecoveryDrainP2P },
			want: "0 recovery-action interconnect/critical/drain-p2p"},
		{name: "a recovery action of drain and reset requires a GPU reset",
			cur:  func(d *gpu.Device) { d.RecoveryAction = gpu.RecoveryDrainAndReset },
			want: "0 recovery-action gpu/critical/reset-gpu"},
		{name: "an unknown recovery action is treated as a node reboot",
			cur:  func(d *gpu.Device) { d.RecoveryAction = "recover-imex-domain" },
			want: "0 recovery-action gpu/critical/reboot-node"},
		{name: "an empty recovery action is none",
			cur: func(d *gpu.Device) { d.RecoveryAction = "" }, want: ""},
		{name: "a fabric registration still in progress is critical",
			cur:  func(d *gpu.Device) { d.Fabric = gpu.Fabric{State: "in-progress"} },
			want: "0 fabric-registration interconnect/critical/reset-gpu"},
		{name: "a fabric registration completed with an error is critical",
			cur:  func(d *gpu.Device) { d.Fabric.Status = "NVML_ERROR_INSUFFICIENT_RESOURCES" },
			want: "0 fabric-registration interconnect/critical/reset-gpu"},
		{name: "a GPU without an NVSwitch fabric is not judged on it",
			cur: func(d *gpu.Device) { d.Fabric = gpu.Fabric{State: "not-supported"} }, want: ""},
		{name: "a lost GPU is one fatal finding that requires a node reboot",
			cur: func(d *gpu.Device) {
				d.RowRemap.Pending, d.NVLinks[0].Active = true, false
				lostErr(d, gpu.FieldTemperature)
				lostErr(d, gpu.FieldECCErrors)
			},
			want: "0 gpu-lost gpu/fatal/reboot-node"},
		{name: "a GPU that cannot be opened is lost",
			cur:  func(d *gpu.Device) { d.SetErr(gpu.FieldDevice, fmt.Errorf("open GPU 0: %w", gpu.ErrNotSupported)) },
			want: "0 gpu-lost gpu/fatal/reboot-node"},
		{name: "a fact the GPU does not have is not judged and not reported",
			cur: func(d *gpu.Device) {
				d.RowRemap.Pending = true
				d.SetErr(gpu.FieldRowRemap, fmt.Errorf("row remap: %w", gpu.ErrNotSupported))
			}, want: ""},
		{name: "a fact that could not be read is not judged, and the GPU warns that it cannot be seen",
			cur: func(d *gpu.Device) {
				d.RowRemap.Pending, d.ECC.VolatileUncorrected = true, 9
				d.SetErr(gpu.FieldRowRemap, fmt.Errorf("row remap: %w", gpu.ErrNotSupported))
				d.SetErr(gpu.FieldECCErrors, fmt.Errorf("timeout reading ECC"))
			}, want: "0 telemetry-unreadable driver/warning/none"},
		{name: "a GPU none of whose facts could be read warns once",
			cur: func(d *gpu.Device) {
				for _, f := range []gpu.Field{gpu.FieldECCErrors, gpu.FieldRowRemap, gpu.FieldRetiredPages, gpu.FieldTemperature,
					gpu.FieldPower, gpu.FieldClockEvents, gpu.FieldPCI, gpu.FieldRecoveryAction, gpu.FieldNVLink, gpu.FieldFabric} {
					d.SetErr(f, fmt.Errorf("%s: unknown error", f))
				}
			}, want: "0 telemetry-unreadable driver/warning/none"},
		{name: "the reading of a GPU that was lost is no baseline",
			prev: func(d *gpu.Device) { d.ECC.VolatileUncorrected = 2; lostErr(d, gpu.FieldPower) },
			cur:  func(d *gpu.Device) { d.ECC.VolatileUncorrected = 2 },
			want: "0 ecc-uncorrected memory/critical/reset-gpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iv := tt.interval
			if iv == 0 {
				iv = 10 * time.Second
			}
			var prev *gpu.Snapshot
			if !tt.noPrev {
				prev = snapshotAt(t0, tt.prev)
			}
			got := FromSnapshot(prev, snapshotAt(t0.Add(iv), tt.cur), rules.DefaultThresholds())
			if r := render(got); r != tt.want {
				t.Errorf("findings\n got %q\nwant %q", r, tt.want)
			}
		})
	}
}

func TestFromSnapshotReportsAGPUTheDriverNoLongerLists(t *testing.T) {
	prev := snapshotAt(t0, nil)
	cur := snapshotAt(t0.Add(time.Second), nil)
	cur.Devices = cur.Devices[:1]
	got := FromSnapshot(prev, cur, rules.DefaultThresholds())
	if r := render(got); r != "1 gpu-lost gpu/fatal/reboot-node" || got[0].GPU != "GPU-1" {
		t.Errorf("findings %q (GPU %q), want GPU-1 lost", r, got[0].GPU)
	}
}

func TestFromSnapshotFillsEveryField(t *testing.T) {
	cur := snapshotAt(t0, func(d *gpu.Device) { d.RowRemap.Pending = true })
	got := FromSnapshot(nil, cur, rules.DefaultThresholds())
	if len(got) != 1 {
		t.Fatalf("got %d findings, want 1", len(got))
	}
	f := got[0]
	if f.GPU != "GPU-0" || f.GPUIndex != 0 || f.Source != SourceCounter || f.Count != 1 ||
		!f.FirstSeen.Equal(t0) || !f.LastSeen.Equal(t0) || f.Summary != "row remap pending: GPU reset required" ||
		len(f.Evidence) != 1 || !strings.HasPrefix(f.Evidence[0], "2025-05-18T19:02:39Z rowRemap.pending true") {
		t.Errorf("finding %+v", f)
	}
}

func TestFromSnapshotOfNothingIsNothing(t *testing.T) {
	if got := FromSnapshot(snapshotAt(t0, nil), nil, rules.DefaultThresholds()); got != nil {
		t.Errorf("FromSnapshot(prev, nil) = %v, want nil", got)
	}
}
