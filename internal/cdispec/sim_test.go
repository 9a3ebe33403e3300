package cdispec

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// The keeper of simulated GPUs writes a spec the CDI library accepts, naming every GPU, and
// the library injects each one as the runtime would: /dev/nvidia<index> backed by the host's
// /dev/null, with the variable naming its UUID.
func TestTheSpecOfSimulatedGPUsIsValidAndInjectsEveryGPU(t *testing.T) {
	if fi, err := os.Stat(SimulatedHostPath); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Skipf("this machine has no character device %s for the CDI library to inject: %v", SimulatedHostPath, err)
	}
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	k := &Keeper{Dir: dir, Simulated: true} // no Root: nothing is discovered
	if wrote, err := k.Sync(snap); err != nil || !wrote {
		t.Fatalf("Sync on simulated GPUs: wrote %v, %v", wrote, err)
	}
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(dir), cdiapi.WithAutoRefresh(false))
	if err != nil || len(cache.GetErrors()) > 0 {
		t.Fatalf("CDI cache over %s: %v %v", dir, err, cache.GetErrors())
	}
	var names []string
	for _, d := range snap.Devices {
		names = append(names, Kind+"="+d.UUID)
	}
	if got := len(cache.ListDevices()); got != 2*len(snap.Devices)+1 {
		t.Errorf("%d devices in the spec, want one by UUID and one by index per GPU, and all", got)
	}
	cases := []struct {
		name    string
		devices []string
	}{
		{"one GPU by UUID", names[3:4]},
		{"two GPUs by UUID", names[:2]},
		{"every GPU by UUID", names},
		{"every GPU as all", []string{Kind + "=all"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
			if unresolved, err := cache.InjectDevices(spec, tc.devices...); err != nil {
				t.Fatalf("inject %v: unresolved %v: %v", tc.devices, unresolved, err)
			}
			want := len(tc.devices)
			if tc.devices[0] == Kind+"=all" {
				want = len(snap.Devices)
			}
			var gpus int
			for _, dn := range spec.Linux.Devices {
				if dn.Type != "c" || dn.Major != 1 || dn.Minor != 3 {
					t.Errorf("device %s is %s %d:%d, want the character device 1:3 of /dev/null", dn.Path, dn.Type, dn.Major, dn.Minor)
				}
				if dn.Path != "/dev/nvidiactl" && dn.Path != "/dev/nvidia-uvm" {
					gpus++
				}
			}
			if gpus != want || len(spec.Linux.Devices) != want+2 {
				t.Errorf("injected %d nodes, %d of them GPUs; want %d GPUs, nvidiactl and nvidia-uvm", len(spec.Linux.Devices), gpus, want)
			}
			for _, d := range snap.Devices {
				env := fmt.Sprintf("GPUNODE_SIM_GPU_%d=%s", d.Index, d.UUID)
				node := fmt.Sprintf("/dev/nvidia%d", d.Index)
				given := slices.Contains(tc.devices, Kind+"="+d.UUID) || tc.devices[0] == Kind+"=all"
				hasNode := slices.ContainsFunc(spec.Linux.Devices, func(dn oci.LinuxDevice) bool { return dn.Path == node })
				if slices.Contains(spec.Process.Env, env) != given || hasNode != given {
					t.Errorf("GPU %d given %v: env %v, node %s present %v", d.Index, given, spec.Process.Env, node, hasNode)
				}
			}
		})
	}
}

// A simulated MIG device gets its parent's node and two capability nodes, all /dev/null.
func TestASimulatedMIGDeviceGetsItsParentsNodeAndTwoCapabilityNodes(t *testing.T) {
	devs := migGPUs()
	s, err := Build(devs, SimulatedHost(devs))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range s.Devices {
		if d.Name != "MIG-22222222-0000-0000-0000-000000000000" {
			continue
		}
		var got []string
		for _, n := range d.ContainerEdits.DeviceNodes {
			got = append(got, n.Path+"<-"+n.HostPath)
		}
		want := []string{"/dev/nvidia1<-/dev/null", "/dev/nvidia-caps/nvidia-cap3<-/dev/null", "/dev/nvidia-caps/nvidia-cap4<-/dev/null"}
		if !slices.Equal(got, want) || !slices.Equal(d.ContainerEdits.Env, []string{"GPUNODE_SIM_MIG_1_1=" + d.Name}) {
			t.Errorf("MIG device nodes %v env %v, want %v and its variable", got, d.ContainerEdits.Env, want)
		}
		return
	}
	t.Fatalf("no device for the second MIG device in %+v", s.Devices)
}
