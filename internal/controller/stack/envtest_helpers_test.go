package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/testenv"
)

// waitTimeout bounds every wait for the controller; a pass takes milliseconds, a loaded
// machine makes it longer.
const waitTimeout = 60 * time.Second

// testNamespace is the controller's namespace in these tests.
const testNamespace = "gpunode-system"

// chartAgent is the chart's agent DaemonSet the controller is told of (--stack-agent-template).
const chartAgent = "gpunode-agent"

// startController starts a manager running the stack Reconciler against the test API
// server, with the controller command's cache and client options, and stops it when t ends.
func startController(t *testing.T) client.Client {
	t.Helper()
	cfg, c := testenv.Start(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}
	if err := c.Create(t.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", testNamespace, err)
	}
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: s,
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{
			&corev1.Node{}, &corev1.Pod{}, &v1alpha1.AcceptanceRecord{}, &resourcev1.ResourceSlice{},
		}}},
		Cache:                  cache.Options{ByObject: CacheOptions(testNamespace)},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	r := &Reconciler{Client: mgr.GetClient(), Cache: mgr.GetCache(), Recorder: mgr.GetEventRecorder(Name),
		Clock: clock.RealClock{}, Namespace: testNamespace, AgentTemplate: chartAgent}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("the manager stopped with an error: %v", err)
		}
	})
	return c
}

// create creates obj and deletes it when t ends.
func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
}

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// publish plays the agent: the node's GPUNode with NVML's driver version and the toolkit
// checks' verdict.
func publish(t *testing.T, c client.Client, name, driver string, toolkitReady bool) {
	t.Helper()
	ctx := t.Context()
	gn := &v1alpha1.GPUNode{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, gn); apierrors.IsNotFound(err) {
		create(t, c, &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.GPUNodeSpec{NodeName: name}})
	}
	want := reportingGPUNode(name, driver, toolkitReady)
	err := retryOnConflict(ctx, func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, gn); err != nil {
			return err
		}
		gn.Status.Versions.Driver, gn.Status.Stack = want.Status.Versions.Driver, want.Status.Stack
		return c.Status().Update(ctx, gn)
	})
	if err != nil {
		t.Fatalf("publishing GPUNode %s: %v", name, err)
	}
}

// startPod plays the DaemonSet controller and the kubelet: pool's pod of component on node
// at version, Running and Ready.
func startPod(t *testing.T, c client.Client, pool, component, nodeName, version string) *corev1.Pod {
	t.Helper()
	want := runningPod(pool, component, nodeName, version)
	pod := want.DeepCopy()
	pod.Spec.Containers = []corev1.Container{{Name: component, Image: "example.invalid/" + component}}
	create(t, c, pod)
	pod.Status = want.Status
	pod.Status.Conditions[0].LastTransitionTime = metav1.Now()
	if err := c.Status().Update(t.Context(), pod); err != nil {
		t.Fatalf("marking pod %s running and ready: %v", pod.Name, err)
	}
	return pod
}

// installGPUOperatorCRDs installs the minimal copies of the GPU Operator's CRDs in
// testdata and waits until they are served.
func installGPUOperatorCRDs(t *testing.T, c client.Client) {
	t.Helper()
	for _, f := range []string{"nvidia.com_clusterpolicies.yaml", "nvidia.com_nvidiadrivers.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			t.Fatalf("decoding %s: %v", f, err)
		}
		if err := c.Create(t.Context(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("installing %s: %v", f, err)
		}
		eventually(t, "CRD "+crd.Name+" established", func() (bool, string) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(t.Context(), client.ObjectKey{Name: crd.Name}, got); err != nil {
				return false, err.Error()
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%+v", got.Status.Conditions)
		})
	}
}

// eventually polls ok until it holds, failing with what it last said.
func eventually(t *testing.T, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		done, last := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; last seen: %s", waitTimeout, what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitNode waits until Node name's stack label and hold are as wanted ("" = none).
func waitNode(t *testing.T, c client.Client, name, label, holdPrefix string, holdContains ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("Node %s labelled %q and held %q", name, label, holdPrefix), func() (bool, string) {
		n := &corev1.Node{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, n); err != nil {
			return false, err.Error()
		}
		holds, err := nodeops.ParseHolds(name, n.Annotations[v1alpha1.AnnotationHolds])
		if err != nil {
			return false, err.Error()
		}
		h, held := holds.Find(v1alpha1.HoldOwnerStack)
		seen := fmt.Sprintf("label %q, stack hold %v %q, taints %v", n.Labels[v1alpha1.LabelStackPool], held, h.Reason, n.Spec.Taints)
		if n.Labels[v1alpha1.LabelStackPool] != label {
			return false, seen
		}
		if holdPrefix == "" {
			return !held, seen
		}
		if !held || !strings.HasPrefix(h.Reason, holdPrefix) {
			return false, seen
		}
		for _, s := range holdContains {
			if !strings.Contains(h.Reason, s) {
				return false, seen
			}
		}
		return true, seen
	})
}

// waitPool waits until StackPool name's status satisfies ok.
func waitPool(t *testing.T, c client.Client, name, what string, ok func(*v1alpha1.StackPool) bool) *v1alpha1.StackPool {
	t.Helper()
	p := &v1alpha1.StackPool{}
	eventually(t, "StackPool "+name+": "+what, func() (bool, string) {
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, p); err != nil {
			return false, err.Error()
		}
		return p.Status.ObservedGeneration == p.Generation && ok(p), fmt.Sprintf("%+v", p.Status)
	})
	return p
}

func retryOnConflict(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil || !apierrors.IsConflict(err) || ctx.Err() != nil {
			return err
		}
	}
}

// waitEvent waits for an Event of reason about the object named regarding.
func waitEvent(t *testing.T, c client.Client, regarding, reason string) {
	t.Helper()
	eventually(t, fmt.Sprintf("an Event %s about %s", reason, regarding), func() (bool, string) {
		var list eventsv1.EventList
		if err := c.List(t.Context(), &list); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == regarding {
				if e.Reason == reason {
					return true, ""
				}
				seen = append(seen, e.Reason+": "+e.Note)
			}
		}
		return false, fmt.Sprintf("%v", seen)
	})
}
