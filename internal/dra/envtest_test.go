package dra_test

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpunode/gpunode/internal/dra"
	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/testenv"
)

// A real kube-apiserver (resource.k8s.io/v1) accepts the node's slice as the plugin
// publishes it: eight GPUs with their attributes, owned by the Node (whose deletion removes
// it), and the health taint added, made NoExecute when the policy asks for it, and lifted
// as the engine decides.
func TestTheAPIServerAcceptsTheNodesSliceAndItsTaints(t *testing.T) {
	cfg, _ := testenv.Start(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}) })
	e := newEnv(t, "h200x8")
	p, stop := e.start(t, cs)
	slice := func() *resourceapi.ResourceSlice {
		l, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil || len(l.Items) != 1 {
			return nil
		}
		return &l.Items[0]
	}
	waitFor(t, "the node's slice in the API server", func() bool { s := slice(); return s != nil && len(s.Spec.Devices) == 8 })
	s := slice()
	if s.Spec.Driver != dra.DriverName || s.Spec.Pool.Name != node || len(s.OwnerReferences) != 1 ||
		s.OwnerReferences[0].Kind != "Node" || s.OwnerReferences[0].UID != n.UID {
		t.Fatalf("slice %s: driver %s, pool %s, owners %+v", s.Name, s.Spec.Driver, s.Spec.Pool.Name, s.OwnerReferences)
	}
	want := dra.Devices(dra.Facts{Snapshot: snapshotOf(t, e.backend)}).Devices
	for i, d := range s.Spec.Devices {
		if d.Name != want[i].Name || len(d.Attributes) != len(want[i].Attributes) {
			t.Errorf("device %d: %s with %d attributes, want %s with %d", i, d.Name, len(d.Attributes), want[i].Name, len(want[i].Attributes))
		}
	}

	uuid := want[5].Attributes["uuid"].StringValue
	e.health.set(*uuid, health.State{Health: health.Unhealthy, Action: fault.ActionRebootNode, Causes: []string{"xid-79"}})
	p.Notify()
	waitFor(t, "gpu-5's taint in the API server", func() bool { s := slice(); return s != nil && len(s.Spec.Devices[5].Taints) == 1 })
	taint := slice().Spec.Devices[5].Taints[0]
	if taint.Key != dra.TaintKey || taint.Value != dra.ValueNeedsReboot || taint.Effect != resourceapi.DeviceTaintEffectNoSchedule || taint.TimeAdded == nil {
		t.Errorf("gpu-5's taint %+v: want %s=%s:NoSchedule with the time the API server added", taint, dra.TaintKey, dra.ValueNeedsReboot)
	}
	out, _ := json.MarshalIndent(slice().Spec.Devices[5], "", "  ")
	t.Logf("gpu-5 tainted, as the API server stores it:\n%s", out)
	// The governing policy asks for NoExecute: the same taint, now evicting.
	p.SetUnhealthyEffect(resourceapi.DeviceTaintEffectNoExecute)
	waitFor(t, "gpu-5's taint NoExecute in the API server", func() bool {
		s := slice()
		return s != nil && len(s.Spec.Devices[5].Taints) == 1 && s.Spec.Devices[5].Taints[0].Effect == resourceapi.DeviceTaintEffectNoExecute
	})
	if n := slice().Spec.Devices[5].Taints[0]; n.Key != dra.TaintKey || n.Value != dra.ValueNeedsReboot {
		t.Errorf("gpu-5's taint under NoExecute %+v: want %s=%s", n, dra.TaintKey, dra.ValueNeedsReboot)
	}
	e.health.set(*uuid, health.State{Health: health.Healthy, Action: fault.ActionNone})
	p.Notify()
	waitFor(t, "gpu-5's taint lifted", func() bool { s := slice(); return s != nil && len(s.Spec.Devices[5].Taints) == 0 })
	stop()
}
