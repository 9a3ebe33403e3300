package nvml

import (
	"context"
	"reflect"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/nvml/nvmltest"
)

// The MIG layout read alone is the one a Snapshot shows: every GPU's UUID, MIG mode, and its
// MIG devices' UUIDs in slot order; a GPU that cannot be opened is left empty.
func TestTheMIGLayoutReadAloneIsTheSnapshots(t *testing.T) {
	lib, err := nvmltest.DGXA100(map[int][]nvmltest.Instance{2: {nvmltest.MIG3g, nvmltest.MIG2g, nvmltest.MIG1g}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(WithLibrary(lib))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	snap, err := b.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want gpu.MIGLayout
	for _, d := range snap.Devices {
		l := gpu.GPULayout{UUID: d.UUID, MIG: d.MIG.Enabled}
		for _, m := range d.MIGDevices {
			l.Devices = append(l.Devices, m.UUID)
		}
		want = append(want, l)
	}
	got, err := b.MIGLayout(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MIG layout\n%+v\nwant the snapshot's\n%+v", got, want)
	}
	if len(got) != 8 || !got[2].MIG || len(got[2].Devices) != 3 || got[1].MIG {
		t.Errorf("layout %+v: want GPU 2 in MIG mode with 3 devices, the others whole", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.MIGLayout(ctx); err == nil {
		t.Error("a closed backend read a MIG layout")
	}
}

// A GPU whose handle cannot be had is reported empty, not as an error of the whole layout.
func TestAGPUThatCannotBeOpenedHasAnEmptyLayout(t *testing.T) {
	lib, err := nvmltest.DGXA100(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(WithLibrary(lib))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	b.lib = handleFails{Interface: lib, index: 3}
	got, err := b.MIGLayout(context.Background())
	if err != nil || len(got) != 8 || got[3].UUID != "" || got[4].UUID == "" {
		t.Errorf("layout %+v, %v: want 8 GPUs, GPU 3 empty", got, err)
	}
}

// handleFails is a library whose GPU index cannot be opened.
type handleFails struct {
	gonvml.Interface
	index int
}

func (h handleFails) DeviceGetHandleByIndex(i int) (gonvml.Device, gonvml.Return) {
	if i == h.index {
		return nil, gonvml.ERROR_GPU_IS_LOST
	}
	return h.Interface.DeviceGetHandleByIndex(i)
}

// BenchmarkMIGLayoutOnThisHost measures the MIG layout read alone on the real GPUs of this
// host (what the DRA plugin polls), to set beside BenchmarkSnapshotOnThisHost.
func BenchmarkMIGLayoutOnThisHost(b *testing.B) {
	b.Setenv(EnvLibraryPath, "")
	be, err := New()
	if err != nil {
		b.Skipf("needs the NVIDIA driver: %v", err)
	}
	defer closeBackend(b, be)
	for b.Loop() {
		if _, err := be.MIGLayout(context.Background()); err != nil {
			b.Fatalf("MIGLayout: %v", err)
		}
	}
}
