package simhost

import (
	"context"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/host"
)

func TestTheSimulatedHostDescribesEveryGPUOfThePreset(t *testing.T) {
	for _, preset := range sim.Presets() {
		t.Run(preset, func(t *testing.T) {
			b, err := sim.Load(preset)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := b.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			r, err := Reader(snap.Devices, nil)
			if err != nil {
				t.Fatal(err)
			}
			f, err := r.Read(context.Background(), host.Options{}, host.GPURefs(snap.Devices))
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Errors) != 0 {
				t.Errorf("host facts with errors: %v", f.Errors)
			}
			if len(f.GPUs) != len(snap.Devices) {
				t.Fatalf("%d GPU host entries for %d GPUs", len(f.GPUs), len(snap.Devices))
			}
			for _, g := range f.GPUs {
				if len(g.Errors) != 0 {
					t.Errorf("GPU %s: %v", g.BusID, g.Errors)
				}
			}
			if !f.Containerd.Installed || f.Containerd.Config == nil || !f.Containerd.Config.NvidiaRuntime {
				t.Errorf("containerd = %+v", f.Containerd)
			}
			if len(f.CDI.Specs) != 1 || len(f.CDI.Specs[0].Stale) != 0 || f.CDI.Specs[0].Error != "" {
				t.Errorf("CDI = %+v", f.CDI)
			}
		})
	}
}

func TestParseTxtarDecodesHexFiles(t *testing.T) {
	files, err := parseTxtar("comment\n-- a --\nx\n-- b.hex --\n06 00 01\n")
	if err != nil {
		t.Fatal(err)
	}
	if string(files["a"]) != "x\n" || len(files["b"]) != 3 || files["b"][2] != 1 {
		t.Fatalf("files = %q", files)
	}
}
