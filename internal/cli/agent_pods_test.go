package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

// scriptedKubelet serves the kubelet's pod-resources API with the pods a test sets.
type scriptedKubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	mu   sync.Mutex
	pods []*podresourcesv1.PodResources
}

func (k *scriptedKubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return &podresourcesv1.ListPodResourcesResponse{PodResources: k.pods}, nil
}

// serve serves k on a unix socket until the test ends and returns its path (in a short
// folder: a socket path has a 108-byte limit).
func (k *scriptedKubelet) serve(t *testing.T) string {
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

// `gpunode agent` wired end to end: the pods the kubelet reports on a GPU reach the
// GPUNode status and the evidence bundle the controller asks for.
func TestTheAgentCommandPublishesThePodsOnEachGPUAndPutsThemInEvidence(t *testing.T) {
	cfg, c := testenv.Start(t)
	ctx := context.Background()
	node := "agent-pods-1"
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	kubelet := &scriptedKubelet{}
	sock := kubelet.serve(t)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan int, 1)
	var out, errOut bytes.Buffer
	go func() {
		done <- Execute(runCtx, []string{"agent", "--node-name", node, "--sim", "h100x8", "--interval", "100ms",
			"--kubeconfig", kubeconfigFor(t, cfg), "--state-dir", t.TempDir(), "--pod-resources-socket", sock}, &out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != ExitOK {
			t.Errorf("gpunode agent exited %d:\n%s", code, errOut.String())
		}
	})

	var uuid string
	waitFor(t, "the agent publishes its GPUs", func(gn *v1alpha1.GPUNode) error {
		if len(gn.Status.Inventory.GPUs) != 8 {
			return fmt.Errorf("%d GPUs", len(gn.Status.Inventory.GPUs))
		}
		uuid = gn.Status.Inventory.GPUs[3].UUID
		return nil
	}, c, node)
	kubelet.mu.Lock()
	kubelet.pods = []*podresourcesv1.PodResources{{Namespace: "ml", Name: "train-0", Containers: []*podresourcesv1.ContainerResources{{
		Name: "main", Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{uuid}}},
	}}}}
	kubelet.mu.Unlock()
	waitFor(t, "GPU 3 lists pod ml/train-0 and no process", func(gn *v1alpha1.GPUNode) error {
		for _, g := range gn.Status.GPUHealth {
			if g.Index == 3 && slices.Equal(g.Pods, []string{"ml/train-0"}) && g.Processes != nil && *g.Processes == 0 {
				return nil
			}
		}
		return fmt.Errorf("gpuHealth %+v", gn.Status.GPUHealth)
	}, c, node)

	gn := &v1alpha1.GPUNode{}
	if err := c.Get(ctx, client.ObjectKey{Name: node}, gn); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(gn.DeepCopy())
	gn.Spec.Remediation = &v1alpha1.RemediationRequest{ID: 1, Step: v1alpha1.StepCaptureEvidence, GPUs: []string{uuid}, Reason: "test"}
	if err := c.Patch(ctx, gn, patch, client.FieldOwner(v1alpha1.FieldManagerRemediation)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the evidence bundle names the pod on the GPU", func(gn *v1alpha1.GPUNode) error {
		a := gn.Status.RemediationAnswer
		if a == nil || a.ID != 1 || a.Outcome != v1alpha1.OutcomeSucceeded || a.Evidence == nil || !slices.Equal(a.Evidence.Pods, []string{"ml/train-0"}) {
			return fmt.Errorf("remediationAnswer %+v", a)
		}
		return nil
	}, c, node)
}

// waitFor retries check on the GPUNode named name for up to 20 s.
func waitFor(t *testing.T, what string, check func(*v1alpha1.GPUNode) error, c client.Client, name string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		gn := &v1alpha1.GPUNode{}
		err := c.Get(context.Background(), client.ObjectKey{Name: name}, gn)
		if err == nil {
			err = check(gn)
		}
		if err == nil {
			t.Logf("%s: after %s", what, time.Since(deadline.Add(-20*time.Second)).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after 20 s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// With --pod-resources-socket "" the agent reads no pods and still publishes every round
// (it once dereferenced the absent pod source: a nil *Cache inside a non-nil interface).
func TestTheAgentCommandWithoutAPodResourcesSocketPublishesWithoutPods(t *testing.T) {
	cfg, c := testenv.Start(t)
	ctx := context.Background()
	node := "agent-no-pods-1"
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan int, 1)
	var out, errOut bytes.Buffer
	go func() {
		done <- Execute(runCtx, []string{"agent", "--node-name", node, "--sim", "h100x8", "--interval", "100ms",
			"--kubeconfig", kubeconfigFor(t, cfg), "--state-dir", t.TempDir(), "--pod-resources-socket", ""}, &out, &errOut)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case code := <-done:
			t.Fatalf("gpunode agent exited %d before publishing:\n%s", code, errOut.String())
		default:
		}
		gn := &v1alpha1.GPUNode{}
		if err := c.Get(ctx, client.ObjectKey{Name: node}, gn); err == nil && len(gn.Status.GPUHealth) == 8 {
			for _, g := range gn.Status.GPUHealth {
				if len(g.Pods) != 0 {
					t.Errorf("GPU %d lists pods %v without a pod-resources socket", g.Index, g.Pods)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no status with 8 GPUs within 20 s:\n%s", errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Errorf("gpunode agent exited %d:\n%s", code, errOut.String())
	}
}
