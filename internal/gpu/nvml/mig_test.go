package nvml

import (
	"slices"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/nvml/nvmltest"
)

// partition puts d in MIG mode with the layout (GPU and compute instance profile ids).
func partition(t *testing.T, d *server.Device, layout [][2]int) {
	t.Helper()
	var in []nvmltest.Instance
	for _, l := range layout {
		in = append(in, nvmltest.Instance{GPU: l[0], Compute: l[1]})
	}
	if err := nvmltest.Partition(d, in...); err != nil {
		t.Fatalf("partition GPU %d: %v", d.Index, err)
	}
}

func TestMIGDevicesAreReadFromAGPUInMIGMode(t *testing.T) {
	cases := []struct {
		name   string
		layout [][2]int
		want   []string
	}{
		{"seven 1g slices of an A100 40GB are seven 1g.5gb devices",
			[][2]int{{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}},
			[]string{"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"}},
		{"a mixed layout names each profile by slices and rounded memory",
			[][2]int{{gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.COMPUTE_INSTANCE_PROFILE_3_SLICE}, {gonvml.GPU_INSTANCE_PROFILE_2_SLICE, gonvml.COMPUTE_INSTANCE_PROFILE_2_SLICE}, {gonvml.GPU_INSTANCE_PROFILE_1_SLICE, gonvml.COMPUTE_INSTANCE_PROFILE_1_SLICE}},
			[]string{"3g.20gb", "2g.10gb", "1g.5gb"}},
		{"a compute instance smaller than its GPU instance gets the c prefix",
			[][2]int{{gonvml.GPU_INSTANCE_PROFILE_7_SLICE, gonvml.COMPUTE_INSTANCE_PROFILE_1_SLICE}},
			[]string{"1c.7g.40gb"}},
		{"MIG mode without instances has no devices", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := dgxa100.New()
			d := srv.Devices[1].(*server.Device)
			partition(t, d, c.layout)
			got := snapshot(t, srv).Devices[1]
			if e := got.Err(gpu.FieldMIG); e != nil || !got.MIG.Enabled {
				t.Fatalf("MIG %+v, error %v; want enabled and readable", got.MIG, e)
			}
			var profiles []string
			for i, m := range got.MIGDevices {
				profiles = append(profiles, m.Profile)
				if m.Index != i || m.UUID == "" || m.MemoryMiB == 0 {
					t.Errorf("MIG device %d = %+v, want its index, UUID and memory", i, m)
				}
			}
			if !slices.Equal(profiles, c.want) {
				t.Errorf("profiles %v, want %v", profiles, c.want)
			}
		})
	}
}

func TestMIGDevicesThatCannotBeListedAreRecordedAndNoneAdvertised(t *testing.T) {
	srv := dgxa100.New()
	d := srv.Devices[0].(*server.Device)
	partition(t, d, [][2]int{{0, 0}, {0, 0}})
	d.GetMigDeviceHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		if i == 1 {
			return nil, gonvml.ERROR_UNKNOWN
		}
		return &mock.Device{GetUUIDFunc: func() (string, gonvml.Return) { return "MIG-x", gonvml.SUCCESS }}, gonvml.SUCCESS
	}
	got := snapshot(t, srv).Devices[0]
	if e := got.Err(gpu.FieldMIG); e == nil || len(got.MIGDevices) != 0 {
		t.Errorf("error %v, devices %v; want the failure recorded and no devices", e, got.MIGDevices)
	}
	if other := snapshot(t, srv).Devices[2]; other.MIG.Enabled || len(other.MIGDevices) != 0 {
		t.Errorf("GPU 2 not in MIG mode has MIG %+v with %d devices", other.MIG, len(other.MIGDevices))
	}
}

func TestMIGProfileNamesRoundMemoryAsNVIDIAsToolsDo(t *testing.T) {
	cases := []struct {
		name          string
		g, c          int
		memMiB, total uint64
		want          string
	}{
		{"an A100 80GB 1g slice is 1g.10gb", 1, 1, 9728, 81920, "1g.10gb"},
		{"an H100 80GB 7g instance is 7g.80gb", 7, 7, 80896, 81559, "7g.80gb"},
		{"an H200 1g slice is 1g.18gb", 1, 1, 16384, 143771, "1g.18gb"},
		{"an unknown total falls back to whole GB rounded up", 2, 2, 9856, 0, "2g.10gb"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := migProfile(c.g, c.c, c.memMiB, c.total); got != c.want {
				t.Errorf("migProfile(%d, %d, %d, %d) = %q, want %q", c.g, c.c, c.memMiB, c.total, got, c.want)
			}
		})
	}
}
