package accept

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/cdi"
	"github.com/gpunode/gpunode/internal/host/simhost"
	"github.com/gpunode/gpunode/internal/xid"
)

// healthyFacts is a simulated DGX H100 node on which every check passes.
func healthyFacts(t *testing.T) *Facts {
	t.Helper()
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, err := simhost.Reader(snap.Devices, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.Read(context.Background(), host.Options{}, host.GPURefs(snap.Devices))
	if err != nil {
		t.Fatal(err)
	}
	// Hopper has no page retirement; make the field readable so the check can pass.
	for i := range snap.Devices {
		delete(snap.Devices[i].Errors, gpu.FieldRetiredPages)
	}
	return &Facts{Node: "node-1", GPU: snap, Host: h}
}

func gpu0(f *Facts) *gpu.Device { return &f.GPU.Devices[0] }

// A mutation that turns one check from pass into the wanted status.
type breakCase struct {
	name   string
	check  string
	mutate func(f *Facts, p *Policy)
	want   Status
}

var breakCases = []breakCase{
	// L0 host
	{"an unreadable os-release fails the OS check", "host.os", func(f *Facts, _ *Policy) {
		f.Host.Errors = map[host.Fact]host.FactError{host.FactOSRelease: {Missing: true, Message: "read /etc/os-release: no such file"}}
	}, StatusFail},
	{"a kernel outside the version matrix fails", "host.kernel", func(_ *Facts, p *Policy) { p.Versions.Kernel = []string{">=6.8"} }, StatusFail},
	{"a host without DMI data skips the firmware check", "host.firmware", func(f *Facts, _ *Policy) { f.Host.Platform = host.Platform{} }, StatusSkip},
	{"an IOMMU that is off fails a policy that wants it enabled", "host.iommu", func(f *Facts, p *Policy) {
		p.Host.IOMMU = "enabled"
		f.Host.Boot.IOMMU.Mode = host.IOMMUDisabled
	}, StatusFail},
	{"cgroup v1 fails the default policy", "host.cgroup", func(f *Facts, _ *Policy) { f.Host.Cgroup.Version, f.Host.Cgroup.Mode = 1, "legacy" }, StatusFail},
	{"Secure Boot on fails a policy that wants it off", "host.secure-boot", func(_ *Facts, p *Policy) { p.Host.SecureBoot = "disabled" }, StatusFail},
	{"Secure Boot with an unsigned module loaded warns", "host.secure-boot", func(f *Facts, _ *Policy) { f.Host.Kernel.Tainted |= 1 << 13 }, StatusWarn},
	{"SMT on fails a policy that wants it off", "host.smt", func(_ *Facts, p *Policy) { p.Host.SMT = "off" }, StatusFail},
	{"an unsynchronized clock fails", "host.time-sync", func(f *Facts, _ *Policy) { f.Host.TimeSync.State = host.TimeNotSynchronized }, StatusFail},
	{"containerd without nvidia runtime or CDI fails", "host.containerd", func(f *Facts, _ *Policy) {
		c := *f.Host.Containerd.Config
		c.NvidiaRuntime, c.NvidiaDefault, c.EnableCDI = false, false, nil
		f.Host.Containerd.Config = &c
	}, StatusFail},
	{"containerd outside the version matrix fails", "host.containerd", func(_ *Facts, p *Policy) { p.Versions.Containerd = []string{">=2.0"} }, StatusFail},
	{"a missing containerd fails when the runtime is required", "host.containerd", func(f *Facts, p *Policy) {
		f.Host.Containerd.Installed = false
		p.Host.NVIDIARuntime = "required"
	}, StatusFail},
	{"a stale CDI spec fails", "host.cdi", func(f *Facts, _ *Policy) {
		f.Host.CDI.Specs[0].Stale = append(f.Host.CDI.Specs[0].Stale, cdi.StaleRef{Device: "GPU-gone", Kind: cdi.RefGPUUUID, Missing: "GPU-gone"})
	}, StatusFail},
	{"an invalid CDI spec fails", "host.cdi", func(f *Facts, _ *Policy) { f.Host.CDI.Specs[0].Error = "invalid device name" }, StatusFail},
	{"missing kubelet reservations warn", "host.kubelet-reservations", func(f *Facts, _ *Policy) { f.Host.Kubelet.KubeReserved = nil }, StatusWarn},
	{"missing kubelet reservations fail when required", "host.kubelet-reservations", func(f *Facts, p *Policy) {
		f.Host.Kubelet.SystemReserved = nil
		p.Host.KubeletReservations = "require"
	}, StatusFail},
	{"a GPU without a NUMA node on a two-node host fails", "host.numa", func(f *Facts, _ *Policy) { f.Host.GPUs[3].NUMANode = -1 }, StatusFail},
	{"a narrower sysfs link fails", "host.pcie-sysfs", func(f *Facts, _ *Policy) { f.Host.GPUs[1].Link.Width = 8 }, StatusFail},
	{"a lower sysfs link generation warns", "host.pcie-sysfs", func(f *Facts, _ *Policy) { f.Host.GPUs[1].Link.Gen = 4 }, StatusWarn},
	{"a small /dev/shm fails", "host.shm", func(f *Facts, _ *Policy) { f.Host.SHM.SizeBytes = 64 << 20 }, StatusFail},
	{"too few hugepages fail", "host.hugepages", func(_ *Facts, p *Policy) { p.Host.MinHugepages = 4096 }, StatusFail},
	{"a nearly full containerd disk fails", "host.disk", func(f *Facts, _ *Policy) { f.Host.Disks[0].FreeBytes = f.Host.Disks[0].TotalBytes / 50 }, StatusFail},
	{"exhausted inodes fail", "host.disk", func(f *Facts, _ *Policy) { f.Host.Disks[1].FreeInodes = 1 }, StatusFail},
	{"no host facts skips host checks with the reason", "host.shm", func(f *Facts, _ *Policy) { f.Host, f.HostErr = nil, errors.New("no root") }, StatusSkip},

	// L1 hardware
	{"no driver fails the driver check", "hardware.driver", func(f *Facts, _ *Policy) { f.GPU, f.GPUErr = nil, gpu.ErrDriverNotFound }, StatusFail},
	{"a missing GPU fails the count", "hardware.gpu-count", func(f *Facts, p *Policy) { p.Expect.GPUs = 8; f.GPU.Devices = f.GPU.Devices[:7] }, StatusFail},
	{"no GPUs at all fail the count", "hardware.gpu-count", func(f *Facts, _ *Policy) { f.GPU.Devices = nil }, StatusFail},
	{"another model than expected fails", "hardware.gpu-model", func(_ *Facts, p *Policy) { p.Expect.Model = "NVIDIA H200" }, StatusFail},
	{"mixed models on one node fail", "hardware.gpu-model", func(f *Facts, _ *Policy) { f.GPU.Devices[5].Name = "NVIDIA H100 PCIe" }, StatusFail},
	{"a GPU with less memory than its siblings fails", "hardware.gpu-memory", func(f *Facts, _ *Policy) { gpu0(f).Memory.TotalMiB = 40000 }, StatusFail},
	{"memory below the policy minimum fails", "hardware.gpu-memory", func(_ *Facts, p *Policy) { p.Expect.MinMemoryMiB = 143000 }, StatusFail},
	{"persistence off fails", "hardware.persistence-mode", func(f *Facts, _ *Policy) { gpu0(f).PersistenceMode = false }, StatusFail},
	{"MIG on fails the default policy", "hardware.mig-mode", func(f *Facts, _ *Policy) { gpu0(f).MIG.Enabled, gpu0(f).MIG.PendingEnabled = true, true }, StatusFail},
	{"a pending MIG change warns", "hardware.mig-mode", func(f *Facts, _ *Policy) { gpu0(f).MIG.PendingEnabled = true }, StatusWarn},
	{"a driver outside the matrix fails", "hardware.driver-version", func(_ *Facts, p *Policy) { p.Versions.Driver = []string{">=590"} }, StatusFail},
	{"a CUDA version outside the matrix fails", "hardware.cuda-version", func(_ *Facts, p *Policy) { p.Versions.CUDA = []string{"12.x"} }, StatusFail},
	{"a narrower PCIe link fails", "hardware.pcie-link", func(f *Facts, _ *Policy) { gpu0(f).PCI.LinkWidth = 8 }, StatusFail},
	{"a lower PCIe generation on a busy GPU warns", "hardware.pcie-link", func(f *Facts, _ *Policy) {
		gpu0(f).PCI.LinkGen, gpu0(f).ClockEvents = 4, nil
	}, StatusWarn},
	{"a lower PCIe generation on an idle GPU passes: it trains down to save power", "hardware.pcie-link", func(f *Facts, _ *Policy) { gpu0(f).PCI.LinkGen = 4 }, StatusPass},
	{"a lower PCIe generation than the policy wants warns", "hardware.pcie-link", func(f *Facts, p *Policy) { p.Expect.PCIeGen = 6 }, StatusWarn},
	{"an inactive NVLink fails", "hardware.nvlink", func(f *Facts, _ *Policy) { gpu0(f).NVLinks[4].Active = false }, StatusFail},
	{"fewer links than the policy expects fail", "hardware.nvlink", func(f *Facts, p *Policy) { p.Expect.NVLinksPerGPU = 18; gpu0(f).NVLinks = gpu0(f).NVLinks[:12] }, StatusFail},
	{"a GPU without NVLink fails a policy that expects links", "hardware.nvlink", func(f *Facts, p *Policy) {
		p.Expect.NVLinksPerGPU = 18
		gpu0(f).NVLinks = nil
		gpu0(f).SetErr(gpu.FieldNVLink, gpu.ErrNotSupported)
	}, StatusFail},
	{"an incomplete fabric registration fails", "hardware.fabric", func(f *Facts, _ *Policy) { gpu0(f).Fabric.State = "in-progress" }, StatusFail},
	{"a fabric error fails", "hardware.fabric", func(f *Facts, _ *Policy) { gpu0(f).Fabric.Status = "NVML_ERROR_UNKNOWN" }, StatusFail},
	{"a lost GPU fails", "hardware.gpu-responding", func(f *Facts, _ *Policy) { gpu0(f).SetErr(gpu.FieldECCErrors, gpu.ErrGPULost) }, StatusFail},
	{"an unreadable device fails the responding check", "hardware.gpu-responding", func(f *Facts, _ *Policy) { gpu0(f).SetErr(gpu.FieldDevice, errors.New("Unknown Error")) }, StatusFail},
	{"an unreadable device is skipped, not failed again, by the other checks", "hardware.ecc-mode", func(f *Facts, _ *Policy) {
		for i := range f.GPU.Devices {
			f.GPU.Devices[i].SetErr(gpu.FieldDevice, errors.New("Unknown Error"))
		}
	}, StatusSkip},
	{"ECC off fails", "hardware.ecc-mode", func(f *Facts, _ *Policy) { gpu0(f).ECC.Enabled, gpu0(f).ECC.PendingEnabled = false, false }, StatusFail},
	{"one uncorrected ECC error since the reset was contained and warns", "hardware.ecc-errors", func(f *Facts, _ *Policy) { gpu0(f).ECC.VolatileUncorrected = 1 }, StatusWarn},
	{"a second uncorrected ECC error since the reset fails", "hardware.ecc-errors", func(f *Facts, _ *Policy) { gpu0(f).ECC.VolatileUncorrected = 2 }, StatusFail},
	{"many corrected ECC errors warn", "hardware.ecc-errors", func(f *Facts, _ *Policy) { gpu0(f).ECC.VolatileCorrected = 5000 }, StatusWarn},
	{"uncorrected ECC errors in the GPU's lifetime only pass: the volatile counter decides", "hardware.ecc-errors", func(f *Facts, _ *Policy) { gpu0(f).ECC.AggregateUncorrected = 3 }, StatusPass},
	{"many correctable remapped rows warn", "hardware.row-remap", func(f *Facts, _ *Policy) { gpu0(f).RowRemap.Correctable = 600 }, StatusWarn},
	{"a pending row remap fails", "hardware.row-remap", func(f *Facts, _ *Policy) { gpu0(f).RowRemap.Pending = true }, StatusFail},
	{"a row remap failure fails", "hardware.row-remap", func(f *Facts, _ *Policy) { gpu0(f).RowRemap.Failure = true }, StatusFail},
	{"a pending page retirement fails", "hardware.retired-pages", func(f *Facts, _ *Policy) { gpu0(f).RetiredPages.Pending = true }, StatusFail},
	{"too many retired pages fail", "hardware.retired-pages", func(f *Facts, _ *Policy) { gpu0(f).RetiredPages.DoubleBit = 64 }, StatusFail},
	{"retired pages not supported skip with the driver's words", "hardware.retired-pages", func(f *Facts, _ *Policy) {
		for i := range f.GPU.Devices {
			f.GPU.Devices[i].SetErr(gpu.FieldRetiredPages, gpu.ErrNotSupported)
		}
	}, StatusSkip},
	{"a hot GPU warns", "hardware.temperature", func(f *Facts, _ *Policy) { gpu0(f).Thermal.GPUC = 88 }, StatusWarn},
	{"a temperature above the policy limit warns", "hardware.temperature", func(_ *Facts, p *Policy) { p.Thresholds.MaxTemperatureC = 30 }, StatusWarn},
	{"an idle GPU near its power limit warns", "hardware.power", func(f *Facts, _ *Policy) { gpu0(f).Power.DrawW = 690 }, StatusWarn},
	{"a busy GPU near its power limit passes", "hardware.power", func(f *Facts, _ *Policy) { gpu0(f).Power.DrawW, gpu0(f).ClockEvents = 690, nil }, StatusPass},
	{"a lowered power limit warns", "hardware.power", func(f *Facts, _ *Policy) { gpu0(f).Power.DefaultLimitW = 700; gpu0(f).Power.LimitW = 500 }, StatusWarn},
	{"a hardware thermal slowdown warns", "hardware.clock-events", func(f *Facts, _ *Policy) {
		gpu0(f).ClockEvents = []gpu.ClockEvent{gpu.ClockEventHWThermal}
	}, StatusWarn},
	{"many PCIe replays warn", "hardware.pcie-replays", func(f *Facts, _ *Policy) { gpu0(f).PCI.ReplayCounter = 1000 }, StatusWarn},
	{"a recovery action other than none fails", "hardware.recovery-action", func(f *Facts, _ *Policy) { gpu0(f).RecoveryAction = gpu.RecoveryGPUReset }, StatusFail},
	{"a hardware XID since boot fails", "hardware.xid-since-boot", func(f *Facts, _ *Policy) {
		f.XIDs = []xid.Event{{XID: 79, PCI: "0000:18:00", Message: "GPU has fallen off the bus."}}
	}, StatusFail},
	{"an application XID since boot only warns", "hardware.xid-since-boot", func(f *Facts, _ *Policy) {
		f.XIDs = []xid.Event{{XID: 13, PCI: "0000:18:00", Message: "Graphics Exception"}}
	}, StatusWarn},
	{"an unreadable kernel log skips the XID check with the reason", "hardware.xid-since-boot", func(f *Facts, _ *Policy) {
		f.KernelLogErr = errors.New("open /dev/kmsg: permission denied")
	}, StatusSkip},
}

func TestEveryCheckPassesOnAHealthyNode(t *testing.T) {
	f := healthyFacts(t)
	p := DefaultPolicy()
	rep, err := Run(context.Background(), f, &p, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Status != StatusPass {
			t.Errorf("%s: %s: %s", r.ID, r.Status, r.Message)
		}
	}
	if !rep.Passed || len(rep.Results) != len(Checks(NodeLocalLayers)) {
		t.Errorf("passed=%v, %d results", rep.Passed, len(rep.Results))
	}
}

func TestEachCheckFailsOnItsFault(t *testing.T) {
	for _, tc := range breakCases {
		t.Run(tc.name, func(t *testing.T) {
			f := healthyFacts(t)
			p := DefaultPolicy()
			tc.mutate(f, &p)
			rep, err := Run(context.Background(), f, &p, time.Now, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got *Result
			for i := range rep.Results {
				if rep.Results[i].ID == tc.check {
					got = &rep.Results[i]
				}
			}
			if got == nil {
				t.Fatalf("check %s did not run", tc.check)
			}
			if got.Status != tc.want {
				t.Fatalf("%s = %s (%s), want %s", tc.check, got.Status, got.Message, tc.want)
			}
			if got.Message == "" {
				t.Error("a verdict without a message")
			}
			if (got.Status == StatusFail || got.Status == StatusWarn) && got.Fix == "" {
				t.Error("a failing check without a fix")
			}
			if rep.Passed != (rep.Summary.Fail == 0) {
				t.Error("passed does not follow the failures")
			}
		})
	}
}

func TestEveryCheckHasAFailingCase(t *testing.T) {
	broken := map[string]bool{}
	for _, tc := range breakCases {
		if tc.want == StatusFail || tc.want == StatusWarn {
			broken[tc.check] = true
		}
	}
	for _, c := range Checks(NodeLocalLayers) {
		if !broken[c.ID] && c.ID != "host.firmware" {
			t.Errorf("check %s has no test that makes it warn or fail", c.ID)
		}
	}
}
