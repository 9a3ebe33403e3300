package deviceplugin

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
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
		{"cdi-annotations names the GPUs in the CDI annotation the CDI library parses", StrategyCDIAnnotations,
			func(t *testing.T, r *pluginapi.ContainerAllocateResponse, uuids []string) {
				keys, devs, err := cdiapi.ParseAnnotations(r.Annotations)
				want := []string{"nvidia.com/gpu=" + uuids[2], "nvidia.com/gpu=" + uuids[5]}
				if err != nil || len(keys) != 1 || !slices.Equal(devs, want) || len(r.Envs) != 0 || len(r.CdiDevices) != 0 {
					t.Errorf("annotations %v (keys %v, devices %v, err %v); want one key naming %v and nothing else", r.Annotations, keys, devs, err, want)
				}
				if _, ok := r.Annotations["cdi.k8s.io/gpunode.gpu_nvidia.com_gpu"]; !ok {
					t.Errorf("annotations %v lack the key cdi.k8s.io/gpunode.gpu_nvidia.com_gpu", r.Annotations)
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

func TestGetPreferredAllocationAnswersOverTheSocket(t *testing.T) {
	h := startPlugin(t, StrategyEnvvar)
	u := h.uuids()
	resp, err := h.client.GetPreferredAllocation(t.Context(), &pluginapi.PreferredAllocationRequest{
		ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{AvailableDeviceIDs: []string{u[7], u[3], u[5], u[6]}, AllocationSize: 2}},
	})
	if err != nil {
		t.Fatalf("GetPreferredAllocation: %v", err)
	}
	if got, want := resp.ContainerResponses[0].DeviceIDs, []string{u[6], u[7]}; !slices.Equal(got, want) {
		t.Errorf("preferred %v, want %v (the NVLinked pair that shares a PCIe switch)", got, want)
	}
}
