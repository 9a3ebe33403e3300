package deviceplugin

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpunode/gpunode/internal/gpu"
)

func TestAllocateAnswersByStrategy(t *testing.T) {
	cases := []struct {
		name     string
		strategy Strategy
		check    func(t *testing.T, r *pluginapi.ContainerAllocateResponse, uuids []string)
	}{
		{"envvar sets NVIDIA_VISIBLE_DEVICES to the UUIDs in index order", StrategyEnvvar,
			func(t *testing.T, r *pluginapi.ContainerAllocateResponse, uuids []string) {
				want := uuids[2] + "," + uuids[5]
				if got := r.Envs[VisibleDevicesEnv]; got != want || len(r.CdiDevices) != 0 {
					t.Errorf("envs %v, CDI %v; want %s=%s and no CDI devices", r.Envs, r.CdiDevices, VisibleDevicesEnv, want)
				}
			}},
		{"cdi-cri names the GPUs as CDI devices nvidia.com/gpu=<uuid>", StrategyCDICRI,
			func(t *testing.T, r *pluginapi.ContainerAllocateResponse, uuids []string) {
				var got []string
				for _, d := range r.CdiDevices {
					got = append(got, d.Name)
				}
				want := []string{"nvidia.com/gpu=" + uuids[2], "nvidia.com/gpu=" + uuids[5]}
				if !slices.Equal(got, want) || len(r.Envs) != 0 {
					t.Errorf("CDI devices %v, envs %v; want %v and no envs", got, r.Envs, want)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := startPlugin(t, c.strategy)
			u := h.uuids()
			resp, err := h.client.Allocate(t.Context(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
				{DevicesIds: []string{u[5], u[2]}}, {DevicesIds: []string{u[0]}},
			}})
			if err != nil {
				t.Fatalf("Allocate: %v", err)
			}
			if len(resp.ContainerResponses) != 2 {
				t.Fatalf("Allocate answered %d containers, want 2", len(resp.ContainerResponses))
			}
			c.check(t, resp.ContainerResponses[0], u)
		})
	}
}

func TestAllocateRefusesDevicesItCannotGive(t *testing.T) {
	h := startPlugin(t, StrategyEnvvar)
	u := h.uuids()
	h.health.set(u[1], false)
	cases := []struct {
		name string
		ids  []string
		code codes.Code
		text string
	}{
		{"an unknown device is refused as not a GPU of this node", []string{u[0], "GPU-nope"}, codes.InvalidArgument, `unknown device "GPU-nope"`},
		{"an unhealthy device is refused as out of service", []string{u[1]}, codes.FailedPrecondition, "is unhealthy"},
		{"a device asked twice is refused", []string{u[2], u[2]}, codes.InvalidArgument, "requested twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.client.Allocate(t.Context(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: c.ids}}})
			if status.Code(err) != c.code || !strings.Contains(err.Error(), c.text) {
				t.Errorf("Allocate(%v) error %v, want code %v containing %q", c.ids, err, c.code, c.text)
			}
		})
	}
	h.health.set(u[1], true)
	if _, err := h.client.Allocate(t.Context(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{u[1]}}}}); err != nil {
		t.Errorf("Allocate of the re-admitted GPU: %v", err)
	}
}

// dgx is eight GPUs, 0-3 on NUMA node 0 and 4-7 on node 1, named g0..g7.
func dgx() []gpu.Device {
	out := make([]gpu.Device, 8)
	for i := range out {
		out[i] = gpu.Device{Index: i, UUID: "g" + string(rune('0'+i)), NUMANode: i / 4}
	}
	return out
}

func TestPreferredAllocationKeepsGPUsOnOneNUMANode(t *testing.T) {
	all := []string{"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"}
	cases := []struct {
		name             string
		available, must  []string
		size             int
		want             []string
		wantErrSubstring string
	}{
		{"from an idle node the lowest NUMA node and indices are chosen", all, nil, 2, []string{"g0", "g1"}, ""},
		{"a node that fits with least to spare is preferred", []string{"g2", "g3", "g4", "g5", "g6", "g7"}, nil, 2, []string{"g2", "g3"}, ""},
		{"a request that only fits on the fuller node goes there", []string{"g3", "g4", "g5", "g6", "g7"}, nil, 3, []string{"g4", "g5", "g6"}, ""},
		{"the rest follow the node of a must-include device", all, []string{"g5"}, 3, []string{"g5", "g4", "g6"}, ""},
		{"a request larger than a node fills the fullest node first", []string{"g0", "g4", "g5", "g6", "g7"}, nil, 5, []string{"g4", "g5", "g6", "g7", "g0"}, ""},
		{"input order does not change the answer", []string{"g7", "g1", "g6", "g0"}, nil, 2, []string{"g0", "g1"}, ""},
		{"unknown devices are never chosen", []string{"x9", "g6", "g7"}, nil, 2, []string{"g6", "g7"}, ""},
		{"a size below the must-include count is refused", all, []string{"g0", "g1"}, 1, nil, "less than"},
		{"a size above what is available is refused", []string{"g0"}, nil, 2, nil, "more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := preferred(dgx(), c.available, c.must, c.size)
			if c.wantErrSubstring != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErrSubstring) {
					t.Fatalf("preferred error %v, want one containing %q", err, c.wantErrSubstring)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("preferred(%v, must %v, %d) = %v, %v; want %v", c.available, c.must, c.size, got, err, c.want)
			}
		})
	}
}

func TestGetPreferredAllocationAnswersOverTheSocket(t *testing.T) {
	h := startPlugin(t, StrategyEnvvar)
	u := h.uuids()
	resp, err := h.client.GetPreferredAllocation(t.Context(), &pluginapi.PreferredAllocationRequest{
		ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{AvailableDeviceIDs: []string{u[7], u[3], u[5], u[6]}, AllocationSize: 2}},
	})
	if err != nil {
		t.Fatalf("GetPreferredAllocation: %v", err)
	}
	if got, want := resp.ContainerResponses[0].DeviceIDs, []string{u[5], u[6]}; !slices.Equal(got, want) {
		t.Errorf("preferred %v, want %v (two GPUs of NUMA node 1 by index)", got, want)
	}
}
