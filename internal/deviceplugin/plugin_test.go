package deviceplugin

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

func TestThePluginRegistersWithTheKubeletAndOffersPreferredAllocation(t *testing.T) {
	h := startPlugin(t, StrategyEnvvar)
	r := h.reg
	if r.Version != pluginapi.Version || r.Endpoint != DefaultSocket || r.ResourceName != ResourceName {
		t.Errorf("Register(version %q, endpoint %q, resource %q), want (%q, %q, %q)",
			r.Version, r.Endpoint, r.ResourceName, pluginapi.Version, DefaultSocket, ResourceName)
	}
	if !r.GetOptions().GetGetPreferredAllocationAvailable() {
		t.Errorf("Register options %v: GetPreferredAllocationAvailable is false", r.GetOptions())
	}
	opts, err := h.client.GetDevicePluginOptions(t.Context(), &pluginapi.Empty{})
	if err != nil {
		t.Fatalf("GetDevicePluginOptions: %v", err)
	}
	if !opts.GetGetPreferredAllocationAvailable() || opts.GetPreStartRequired() {
		t.Errorf("GetDevicePluginOptions = %v, want preferred allocation and no pre-start", opts)
	}
	if _, err := h.client.PreStartContainer(t.Context(), &pluginapi.PreStartContainerRequest{DevicesIds: h.uuids()[:1]}); err != nil {
		t.Errorf("PreStartContainer: %v", err)
	}
}

// recv reads the next device list, failing after waitBound.
func recv(t *testing.T, s grpc.ServerStreamingClient[pluginapi.ListAndWatchResponse]) ([]*pluginapi.Device, time.Duration) {
	t.Helper()
	start := time.Now()
	type result struct {
		r   *pluginapi.ListAndWatchResponse
		err error
	}
	ch := make(chan result, 1)
	go func() {
		r, err := s.Recv()
		ch <- result{r, err}
	}()
	select {
	case res := <-ch:
		if res.err != nil {
			t.Fatalf("ListAndWatch Recv: %v", res.err)
		}
		return res.r.GetDevices(), time.Since(start)
	case <-time.After(waitBound):
		t.Fatalf("ListAndWatch: no update within %v", waitBound)
		return nil, 0
	}
}

// checkList compares a device list with the sim's GPUs, all healthy but unhealthy.
func checkList(t *testing.T, h *harness, got []*pluginapi.Device, unhealthy string) {
	t.Helper()
	if len(got) != len(h.devices) {
		t.Fatalf("ListAndWatch sent %d devices, want %d", len(got), len(h.devices))
	}
	for i, d := range got {
		want := h.devices[i]
		wantHealth := pluginapi.Healthy
		if want.UUID == unhealthy {
			wantHealth = pluginapi.Unhealthy
		}
		if d.ID != want.UUID || d.Health != wantHealth {
			t.Errorf("device %d = (%s, %s), want (%s, %s)", i, d.ID, d.Health, want.UUID, wantHealth)
		}
		nodes := d.GetTopology().GetNodes()
		if len(nodes) != 1 || nodes[0].ID != int64(want.NUMANode) {
			t.Errorf("device %d topology %v, want NUMA node %d", i, d.GetTopology(), want.NUMANode)
		}
	}
}

func TestListAndWatchPushesAHealthChangeAtOnceAndReadmitsTheGPU(t *testing.T) {
	h := startPlugin(t, StrategyEnvvar)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s, err := h.client.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatalf("ListAndWatch: %v", err)
	}
	first, _ := recv(t, s)
	checkList(t, h, first, "")

	faulty := h.devices[3].UUID
	start := time.Now()
	h.health.set(faulty, false)
	got, _ := recv(t, s)
	latency := time.Since(start)
	checkList(t, h, got, faulty)
	t.Logf("fault -> Unhealthy on ListAndWatch: %v", latency)

	start = time.Now()
	h.health.set(faulty, true)
	got, _ = recv(t, s)
	t.Logf("passing check -> Healthy again on ListAndWatch: %v", time.Since(start))
	checkList(t, h, got, "")
}

func TestThePluginRegistersAgainWhenTheKubeletRestarts(t *testing.T) {
	h := startPlugin(t, StrategyEnvvar)
	k := h.kubelet.restart(t)
	r, took := k.registration(t)
	t.Logf("kubelet restart -> registered again after %v", took)
	if r.Endpoint != DefaultSocket || r.ResourceName != ResourceName {
		t.Errorf("re-registration (endpoint %q, resource %q), want (%q, %q)", r.Endpoint, r.ResourceName, DefaultSocket, ResourceName)
	}
	// The socket the kubelet removed is served again: a fresh stream lists the GPUs.
	ctx, cancel := context.WithTimeout(t.Context(), waitBound)
	defer cancel()
	s, err := h.client.ListAndWatch(ctx, &pluginapi.Empty{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("ListAndWatch after restart: %v", err)
	}
	got, _ := recv(t, s)
	checkList(t, h, got, "")
}
