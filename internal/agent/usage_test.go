package agent_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/api/equality"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/labels"
	"github.com/gpunode/gpunode/internal/podresources"
	"github.com/gpunode/gpunode/internal/testenv"
)

// fakeKubelet serves the kubelet's pod-resources API on a unix socket with scripted pods.
type fakeKubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	mu   sync.Mutex
	pods []*podresourcesv1.PodResources
}

func (k *fakeKubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return &podresourcesv1.ListPodResourcesResponse{PodResources: k.pods}, nil
}

func (k *fakeKubelet) set(pods ...*podresourcesv1.PodResources) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pods = pods
}

// serveKubelet serves k until the test ends and returns the socket's path (short: a unix
// socket path has a 108-byte limit that a test's temporary folder can exceed).
func serveKubelet(t *testing.T, k *fakeKubelet) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kubelet")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "kubelet.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("listen on %s: %v", sock, err)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, k)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return sock
}

// podOn is a pod whose one container holds the GPU devices ids of resource.
func podOn(ns, name, resource string, ids ...string) *podresourcesv1.PodResources {
	return &podresourcesv1.PodResources{Namespace: ns, Name: name, Containers: []*podresourcesv1.ContainerResources{{
		Name: "main", Devices: []*podresourcesv1.ContainerDevices{{ResourceName: resource, DeviceIds: ids}},
	}}}
}

// podCache is a pod-resources cache of sock refreshed every 20 ms until the test ends,
// asking parent (when set) which GPU owns a device.
func podCache(t *testing.T, sock string, parent func(string) (string, bool)) *podresources.Cache {
	t.Helper()
	cache := podresources.New(podresources.Options{Socket: sock, Refresh: 20 * time.Millisecond, ParentGPU: parent})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); cache.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return cache
}

// run is start for a test that needs the agent itself.
func run(t *testing.T, cfg agent.Config) *agent.Agent {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent.Run: %v", err)
		}
	})
	return a
}

// usageIs waits until GPU index is published with pods and processes as given (nil: absent).
func usageIs(t *testing.T, c client.Client, name string, index int32, pods []string, processes *int32) {
	t.Helper()
	eventually(t, fmt.Sprintf("GPU %d lists pods %v and %s processes", index, pods, show(processes)), func() error {
		g, err := gpuHealth(c, name, index)
		if err != nil {
			return err
		}
		if !slices.Equal(g.Pods, pods) || show(g.Processes) != show(processes) {
			return fmt.Errorf("GPU %d: pods %v, processes %s", index, g.Pods, show(g.Processes))
		}
		return nil
	})
}

func show(n *int32) string {
	if n == nil {
		return "absent"
	}
	return fmt.Sprint(*n)
}

func count(n int32) *int32 { return &n }

func TestEachGPUListsThePodsTheKubeletGaveItAndTheProcessesOnIt(t *testing.T) {
	_, c := testenv.Start(t)
	kubelet := &fakeKubelet{}
	name, cfg, b := remediationAgent(t, c)
	// The pod source asks the agent which GPU owns an index ID, as `gpunode agent` wires it.
	var a *agent.Agent
	cfg.Pods = podCache(t, serveKubelet(t, kubelet), func(id string) (string, bool) { return a.ParentGPU(id) })
	a = run(t, cfg)
	uuid2 := healthIs(t, c, name, 2, v1alpha1.HealthHealthy)
	uuid5 := healthIs(t, c, name, 5, v1alpha1.HealthHealthy)

	// A training pod on GPU 2 (whole), an inference pod sharing GPU 5 through a time-sliced
	// replica, a pod on GPU 7 named by index (deviceIDStrategy=index), another resource's
	// device that is not a GPU, and a pod on no GPU.
	kubelet.set(
		podOn("ml", "train-0", "nvidia.com/gpu", uuid2),
		podOn("serve", "llm-1", "nvidia.com/gpu.shared", uuid5+"::3"),
		podOn("serve", "llm-2", "nvidia.com/gpu.shared", uuid5+"::1"),
		podOn("ml", "eval", "nvidia.com/gpu", "7"),
		podOn("net", "sriov", "example.com/vf", uuid2),
		&podresourcesv1.PodResources{Namespace: "kube-system", Name: "dns"},
	)
	b.SetProcesses(uuid2, []gpu.Process{{PID: 10, Kind: "compute"}, {PID: 11, Kind: "compute"}})
	usageIs(t, c, name, 2, []string{"ml/train-0"}, count(2))
	usageIs(t, c, name, 5, []string{"serve/llm-1", "serve/llm-2"}, count(0))
	usageIs(t, c, name, 7, []string{"ml/eval"}, count(0))
	usageIs(t, c, name, 0, nil, count(0))

	// The pod ends and its processes with it: the status says so.
	kubelet.set()
	b.SetProcesses(uuid2, nil)
	usageIs(t, c, name, 2, nil, count(0))
}

func TestPodsAreAbsentWhenTheKubeletCannotBeRead(t *testing.T) {
	_, c := testenv.Start(t)
	name, cfg, _ := remediationAgent(t, c)
	cfg.Pods = podCache(t, filepath.Join(t.TempDir(), "no-kubelet.sock"), nil)
	start(t, cfg)
	healthIs(t, c, name, 0, v1alpha1.HealthHealthy)
	usageIs(t, c, name, 0, nil, count(0))
}

// noProcesses is a backend that cannot list processes (it hides the sim's ProcessLister).
type noProcesses struct{ gpu.Backend }

func TestProcessesAreAbsentWhenTheBackendCannotListThem(t *testing.T) {
	_, c := testenv.Start(t)
	name, cfg, _ := remediationAgent(t, c)
	cfg.Backend = noProcesses{cfg.Backend}
	start(t, cfg)
	healthIs(t, c, name, 4, v1alpha1.HealthHealthy)
	usageIs(t, c, name, 4, nil, nil)
}

func TestAnUnchangedStatusIsNotRewrittenAndAChangeInProcessesIs(t *testing.T) {
	_, c := testenv.Start(t)
	name, cfg, b := remediationAgent(t, c)
	cfg.Resync = time.Hour
	start(t, cfg)
	uuid := healthIs(t, c, name, 1, v1alpha1.HealthHealthy)
	usageIs(t, c, name, 1, nil, count(0))
	gn, err := getGPUNode(c, name)
	if err != nil {
		t.Fatal(err)
	}
	before := gn
	time.Sleep(10 * cfg.Interval) // ten rounds with nothing new
	if gn, err = getGPUNode(c, name); err != nil {
		t.Fatal(err)
	}
	// The heartbeat is written every interval, alone; nothing else may change.
	if b, a := withoutHeartbeat(before), withoutHeartbeat(gn); !equality.Semantic.DeepEqual(b, a) {
		t.Errorf("the GPUNode was rewritten (resourceVersion %s -> %s) though nothing changed but the heartbeat:\nbefore %+v\nafter  %+v",
			before.ResourceVersion, gn.ResourceVersion, b, a)
	}
	b.SetProcesses(uuid, []gpu.Process{{PID: 99, Kind: "compute"}})
	usageIs(t, c, name, 1, nil, count(1))
}

func TestTheDevicePluginsSharingLabelsAreThoseTheAgentPublishes(t *testing.T) {
	_, c := testenv.Start(t)
	name, cfg, _ := remediationAgent(t, c)
	cfg.Labels = labels.Config{Sharing: labels.Sharing{Strategy: labels.SharingTimeSlicing, Replicas: 4}}
	start(t, cfg)
	eventually(t, "the node carries 4 replicas and a -SHARED product", func() error {
		n := getNode(t, c, name)
		if n.Labels[labels.KeyGPUReplicas] != "4" || !strings.HasSuffix(n.Labels[labels.KeyGPUProduct], "-SHARED") {
			return fmt.Errorf("replicas %q, product %q", n.Labels[labels.KeyGPUReplicas], n.Labels[labels.KeyGPUProduct])
		}
		return nil
	})
}
