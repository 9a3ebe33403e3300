package dra_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpunode/gpunode/internal/dra"
	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/nvml"
	"github.com/gpunode/gpunode/internal/gpu/nvml/nvmltest"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/labels"
)

func snapshotOf(t testing.TB, b gpu.Backend) *gpu.Snapshot {
	t.Helper()
	t.Cleanup(func() { _ = b.Close() })
	s, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func attr(d resourceapi.Device, name resourceapi.QualifiedName) string {
	a, ok := d.Attributes[name]
	switch {
	case !ok:
		return "<none>"
	case a.StringValue != nil:
		return *a.StringValue
	case a.VersionValue != nil:
		return "v" + *a.VersionValue
	case a.IntValue != nil:
		return fmt.Sprint(*a.IntValue)
	case a.BoolValue != nil:
		return fmt.Sprint(*a.BoolValue)
	}
	return "<empty>"
}

// The slice of a DGX H100 (go-nvml's mock through the NVML backend): eight whole GPUs with
// the contract's attributes and their memory as capacity.
func TestTheSliceOfEightH100sFromTheNVMLMock(t *testing.T) {
	b, err := nvml.New(nvml.WithLibrary(nvmltest.DGXH100()))
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshotOf(t, b)
	inv := dra.Devices(dra.Facts{Snapshot: snap, Class: labels.Mapping{}.Class,
		PCIeRoot: func(bdf string) (string, bool) { return "pci" + bdf[:7], true }})
	if len(inv.Devices) != 8 {
		t.Fatalf("%d devices, want 8", len(inv.Devices))
	}
	for i, d := range inv.Devices {
		g := snap.Devices[i]
		want := map[resourceapi.QualifiedName]string{
			"type": "gpu", "uuid": g.UUID, "productName": g.Name, "index": fmt.Sprint(g.Index),
			"architecture": "hopper", "cudaComputeCapability": "v9.0.0",
			"resource.kubernetes.io/pciBusID": strings.ToLower(g.PCI.BusID[4:]),
			"resource.kubernetes.io/pcieRoot": "pci" + strings.ToLower(g.PCI.BusID[4:11]),
		}
		if d.Name != fmt.Sprintf("gpu-%d", g.Index) {
			t.Errorf("device %d is named %s", i, d.Name)
		}
		for name, v := range want {
			if got := attr(d, name); got != v {
				t.Errorf("%s: %s = %q, want %q", d.Name, name, got, v)
			}
		}
		for _, name := range []resourceapi.QualifiedName{"driverVersion", "cudaDriverVersion", "serial", "brand", "platformClass"} {
			if got := attr(d, name); strings.HasPrefix(got, "<") {
				t.Errorf("%s: %s is %s", d.Name, name, got)
			}
		}
		if mem := d.Capacity["memory"].Value; mem.Value() != int64(g.Memory.TotalMiB)<<20 || mem.Value() == 0 {
			t.Errorf("%s: memory %s, want %d MiB", d.Name, mem.String(), g.Memory.TotalMiB)
		}
		if len(d.Taints) != 0 {
			t.Errorf("%s: taints %v on a healthy GPU", d.Name, d.Taints)
		}
	}
	out, _ := json.MarshalIndent(inv.Devices[0], "", "  ")
	t.Logf("gpu-0 of the DGX H100 mock:\n%s", out)
}

// A GPU in MIG mode offers its MIG devices (named by GPU and compute instance, with the
// profile and the parent), not itself; the other GPUs stay whole.
func TestAGPUInMIGModeIsPublishedAsItsMIGDevices(t *testing.T) {
	lib, err := nvmltest.DGXA100(map[int][]nvmltest.Instance{0: {nvmltest.MIG3g, nvmltest.MIG2g}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := nvml.New(nvml.WithLibrary(lib))
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshotOf(t, b)
	inv := dra.Devices(dra.Facts{Snapshot: snap})
	parent := snap.Devices[0]
	if len(parent.MIGDevices) != 2 {
		t.Fatalf("the mock's GPU 0 has %d MIG devices, want 2", len(parent.MIGDevices))
	}
	if len(inv.Devices) != 2+7 {
		t.Fatalf("%d devices, want 2 MIG devices and 7 GPUs", len(inv.Devices))
	}
	for i, m := range parent.MIGDevices {
		d := inv.Devices[i]
		if want := fmt.Sprintf("gpu-0-mig-%d-%d", m.GPUInstance, m.ComputeInstance); d.Name != want {
			t.Errorf("MIG device %d is named %s, want %s", i, d.Name, want)
		}
		for name, v := range map[resourceapi.QualifiedName]string{"type": "mig", "uuid": m.UUID, "profile": m.Profile,
			"parentUUID": parent.UUID, "parentIndex": "0", "index": "0", "architecture": "ampere"} {
			if got := attr(d, name); got != v {
				t.Errorf("%s: %s = %q, want %q", d.Name, name, got, v)
			}
		}
		if mem := d.Capacity["memory"].Value; mem.Value() != int64(m.MemoryMiB)<<20 {
			t.Errorf("%s: memory %s, want %d MiB", d.Name, mem.String(), m.MemoryMiB)
		}
		if e := inv.Entries[d.Name]; e.UUID != m.UUID || e.Parent != parent.UUID {
			t.Errorf("%s resolves to %+v", d.Name, e)
		}
	}
	if inv.Devices[2].Name != "gpu-1" || attr(inv.Devices[2], "type") != "gpu" {
		t.Errorf("after the MIG devices: %s of type %s, want gpu-1 whole", inv.Devices[2].Name, attr(inv.Devices[2], "type"))
	}
}

// The simulator's GPUs give the same attributes (the real-cluster tier runs on them).
func TestTheSliceOfSimulatedH200s(t *testing.T) {
	b, err := sim.Load("h200x8")
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshotOf(t, b)
	inv := dra.Devices(dra.Facts{Snapshot: snap, Class: labels.Mapping{}.Class})
	if len(inv.Devices) != 8 {
		t.Fatalf("%d devices", len(inv.Devices))
	}
	d := inv.Devices[3]
	mem := d.Capacity["memory"].Value
	if d.Name != "gpu-3" || attr(d, "productName") != snap.Devices[3].Name || attr(d, "architecture") != "hopper" ||
		attr(d, "platformClass") == "<none>" || mem.Value() != int64(snap.Devices[3].Memory.TotalMiB)<<20 {
		t.Errorf("gpu-3: %+v", d)
	}
}

// A GPU that is out of service taints its devices (its MIG devices too); the effect depends
// on what it needs and on eviction.
func TestTaint(t *testing.T) {
	unhealthy := func(a fault.Action) health.State {
		return health.State{Health: health.Unhealthy, Action: a, Causes: []string{"xid-79"}}
	}
	tests := []struct {
		name        string
		state       health.State
		lost, evict bool
		value       string // "" : no taint
		effect      resourceapi.DeviceTaintEffect
	}{
		{"a healthy GPU has no taint", health.State{Health: health.Healthy}, false, true, "", ""},
		{"a degraded GPU stays in service, untainted", health.State{Health: health.Degraded, Action: fault.ActionRestartApp}, false, true, "", ""},
		{"a GPU that needs a reset is NoSchedule even with eviction", unhealthy(fault.ActionResetGPU), false, true, dra.ValueNeedsReset, resourceapi.DeviceTaintEffectNoSchedule},
		{"a GPU that needs a driver reload is NoSchedule", unhealthy(fault.ActionReloadDriver), false, true, dra.ValueNeedsDriverReload, resourceapi.DeviceTaintEffectNoSchedule},
		{"a GPU that needs a reboot is NoExecute with eviction", unhealthy(fault.ActionRebootNode), false, true, dra.ValueNeedsReboot, resourceapi.DeviceTaintEffectNoExecute},
		{"a GPU that needs a reboot is NoSchedule without eviction", unhealthy(fault.ActionRebootNode), false, false, dra.ValueNeedsReboot, resourceapi.DeviceTaintEffectNoSchedule},
		{"a lost GPU is Lost, NoExecute with eviction", unhealthy(fault.ActionResetGPU), true, true, dra.ValueLost, resourceapi.DeviceTaintEffectNoExecute},
		{"a GPU that needs service is NoExecute with eviction", unhealthy(fault.ActionService), false, true, dra.ValueNeedsService, resourceapi.DeviceTaintEffectNoExecute},
		{"a recovered GPU awaiting its check keeps its taint", health.State{Health: health.Unhealthy, Action: fault.ActionResetGPU, AwaitingCheck: true},
			false, false, dra.ValueNeedsReset, resourceapi.DeviceTaintEffectNoSchedule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			taint, msg := dra.Taint(tt.state, tt.lost, tt.evict)
			if tt.value == "" {
				if taint != nil {
					t.Fatalf("taint %+v, want none", taint)
				}
				return
			}
			if taint == nil || taint.Key != dra.TaintKey || taint.Value != tt.value || taint.Effect != tt.effect {
				t.Fatalf("taint %+v, want %s=%s:%s", taint, dra.TaintKey, tt.value, tt.effect)
			}
			if !strings.HasPrefix(msg, tt.value) {
				t.Errorf("message %q does not start with the taint's value", msg)
			}
		})
	}
}

// The MIG devices of an out-of-service GPU carry its taint; the health report says so.
func TestTheMIGDevicesOfATaintedGPUAreTaintedAndReportedUnhealthy(t *testing.T) {
	lib, err := nvmltest.DGXA100(map[int][]nvmltest.Instance{2: {nvmltest.MIG1g, nvmltest.MIG1g}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := nvml.New(nvml.WithLibrary(lib))
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshotOf(t, b)
	st := health.State{Health: health.Unhealthy, Action: fault.ActionResetGPU, Causes: []string{"xid-48"}}
	inv := dra.Devices(dra.Facts{Snapshot: snap, Health: map[string]health.State{snap.Devices[2].UUID: st}})
	rep := dra.HealthReport("node-1", inv, time.Unix(0, 0))
	tainted := 0
	for i, d := range inv.Devices {
		mig := strings.HasPrefix(d.Name, "gpu-2-mig-")
		if mig != (len(d.Taints) == 1) {
			t.Errorf("%s: taints %v", d.Name, d.Taints)
		}
		h := rep.Devices[i]
		if h.DeviceName != d.Name || h.PoolName != "node-1" || (h.Health == "Unhealthy") != mig {
			t.Errorf("%s reported %+v", d.Name, h)
		}
		if mig {
			tainted++
			if !strings.Contains(h.Message, "xid-48") {
				t.Errorf("%s: message %q names no cause", d.Name, h.Message)
			}
		}
	}
	if tainted != 2 {
		t.Errorf("%d MIG devices tainted, want 2", tainted)
	}
}
