package accept

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/simhost"
)

// result runs acceptance on f and returns one check's result.
func result(t *testing.T, f *Facts, p *Policy, id string) Result {
	t.Helper()
	rep, err := Run(context.Background(), f, p, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("check %s did not run", id)
	return Result{}
}

// TestAMultiGPUCheckNamesEveryFailingAndWarningGPU: on the 8-GPU preset, every GPU that
// fails or warns is named under its own status with its UUID, serial and PCI address, and a
// warn on one GPU is never shown as the fail of another.
func TestAMultiGPUCheckNamesEveryFailingAndWarningGPU(t *testing.T) {
	cases := []struct {
		name    string
		check   string
		mutate  func(f *Facts)
		message string
		status  map[int]Status // GPUs not named pass
		fix     []string       // fragments of the fix
		never   string         // a fragment the fix must not have
	}{
		{"two narrow links and a slot-limited one: both fails and the warn are named", "hardware.pcie-link", func(f *Facts) {
			f.GPU.Devices[2].PCI.LinkWidth = 8
			f.GPU.Devices[6].PCI.LinkWidth = 4
			f.GPU.Devices[5].PCI.LinkGenMaxDevice = 6
		}, "GPU 2, GPU 6 fail; GPU 5 warns", map[int]Status{2: StatusFail, 6: StatusFail, 5: StatusWarn},
			[]string{"reseat the GPU or its riser", "nothing is wrong with the GPU: the slot or the BIOS caps the link"}, ""},
		{"a slot-limited link alone is not told to be reseated", "hardware.pcie-link", func(f *Facts) {
			f.GPU.Devices[5].PCI.LinkGenMaxDevice = 6
		}, "GPU 5: ", map[int]Status{5: StatusWarn}, []string{"faster slot"}, "reseat"},
		{"pending remaps fail and many remapped rows warn, each under its own status", "hardware.row-remap", func(f *Facts) {
			for _, i := range []int{0, 3, 4, 7} {
				f.GPU.Devices[i].RowRemap.Pending = true
			}
			f.GPU.Devices[1].RowRemap.Correctable = 1000
		}, "GPU 0, GPU 3, GPU 4, GPU 7 fail; GPU 1 warns", map[int]Status{0: StatusFail, 3: StatusFail, 4: StatusFail, 7: StatusFail, 1: StatusWarn},
			[]string{"the reset applies the remap", "plan a replacement"}, "RMA"},
		{"two models on one node name the GPUs that differ", "hardware.gpu-model", func(f *Facts) {
			f.GPU.Devices[3].Name = "NVIDIA H100 PCIe"
			f.GPU.Devices[4].Name = "NVIDIA H100 PCIe"
		}, "GPU 3, GPU 4 fail", map[int]Status{3: StatusFail, 4: StatusFail}, []string{"pool"}, ""},
		{"a narrow link in sysfs names its GPU", "host.pcie-sysfs", func(f *Facts) {
			f.Host.GPUs[6].Link.Width = 8
		}, "GPU 6: gen", map[int]Status{6: StatusFail}, []string{"reseat the GPU or its riser"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := healthyFacts(t)
			tc.mutate(f)
			p := DefaultPolicy()
			r := result(t, f, &p, tc.check)
			if !strings.Contains(r.Message, tc.message) || strings.Contains(r.Message, "more GPUs") {
				t.Errorf("message %q, want %q", r.Message, tc.message)
			}
			if len(r.GPUs) != len(f.GPU.Devices) {
				t.Fatalf("%d GPU results for %d GPUs", len(r.GPUs), len(f.GPU.Devices))
			}
			for _, g := range r.GPUs {
				want, named := tc.status[g.Index]
				if !named {
					want = StatusPass
				}
				if g.Status != want {
					t.Errorf("GPU %d is %s (%s), want %s", g.Index, g.Status, g.Message, want)
				}
				d := f.GPU.Devices[g.Index]
				if g.UUID != d.UUID || g.Serial != d.Serial || g.BusID != d.PCI.BusID || d.Serial == "" {
					t.Errorf("GPU %d named %s / %s / %s, want %s / %s / %s", g.Index, g.UUID, g.Serial, g.BusID, d.UUID, d.Serial, d.PCI.BusID)
				}
			}
			for _, fix := range tc.fix {
				if !strings.Contains(r.Fix, fix) {
					t.Errorf("fix %q, want %q", r.Fix, fix)
				}
			}
			if tc.never != "" && strings.Contains(r.Fix, tc.never) {
				t.Errorf("fix %q has %q", r.Fix, tc.never)
			}
		})
	}
}

// TestACountCheckGivesTheFixOfItsOwnProblem: too many GPUs is not a missing GPU.
func TestACountCheckGivesTheFixOfItsOwnProblem(t *testing.T) {
	cases := []struct {
		name   string
		expect int
		fix    string
		never  string
	}{
		{"fewer GPUs than expected is a seating, power or PCIe fault", 9, "a missing GPU", "wrong pool"},
		{"more GPUs than expected is the pool or the policy, never a reseat", 4, "wrong pool", "reseat"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := healthyFacts(t)
			p := DefaultPolicy()
			p.Expect.GPUs = tc.expect
			r := result(t, f, &p, "hardware.gpu-count")
			if r.Status != StatusFail || !strings.Contains(r.Fix, tc.fix) || strings.Contains(r.Fix, tc.never) {
				t.Errorf("%s %q, fix %q: want fail with %q, never %q", r.Status, r.Message, r.Fix, tc.fix, tc.never)
			}
		})
	}
}

// TestTheOneGPUPresetPassesDefaultAcceptanceOnItsHost: h200x1 is a VM given one GPU by
// passthrough; its simulated host is the one-node machine such a VM is, and default
// acceptance passes it.
func TestTheOneGPUPresetPassesDefaultAcceptanceOnItsHost(t *testing.T) {
	b, err := sim.Load("h200x1")
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
	p := DefaultPolicy()
	rep, err := Run(context.Background(), &Facts{Node: "vm", GPU: snap, Host: h}, &p, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range rep.Results {
		if res.Status == StatusFail || res.Status == StatusWarn {
			t.Errorf("%s %s: %s", res.Status, res.ID, res.Message)
		}
	}
	if !rep.Passed {
		t.Errorf("h200x1 did not pass default acceptance: %+v", rep.Summary)
	}
}
