package upgrade

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

// waitTimeout bounds every wait for the controller; a pass takes milliseconds, a loaded
// machine makes it longer.
const waitTimeout = 60 * time.Second

// startController starts a manager running the upgrade Reconciler against the test API
// server and stops it when t ends.
func startController(t *testing.T) client.Client {
	t.Helper()
	cfg, c := testenv.Start(t)
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 s,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(Name), Clock: clock.RealClock{}}
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

// pool creates StackPool name (driver 570.172.08, toolkit 1.17.8 as containers) and its
// member Nodes, labelled as the stack controller labels members, each with a GPUNode
// reporting driver.
func pool(t *testing.T, c client.Client, name, driver string, nodes ...string) {
	t.Helper()
	create(t, c, &v1alpha1.StackPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.StackPoolSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": name}},
			Driver:       v1alpha1.DriverOperand{Source: v1alpha1.SourceContainer, Image: "nvcr.io/nvidia/driver", Version: "570.172.08"},
			Toolkit:      v1alpha1.ToolkitOperand{Source: v1alpha1.SourceContainer, Image: "nvcr.io/nvidia/k8s/container-toolkit", Version: "1.17.8"},
		},
	})
	for i, n := range nodes {
		create(t, c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{
			"pool": name, v1alpha1.LabelStackPool: name, "rack": fmt.Sprintf("r%d", i%2),
		}}})
		gn := &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: v1alpha1.GPUNodeSpec{NodeName: n}}
		create(t, c, gn)
		gn.Status.Versions.Driver = driver
		gn.Status.Stack = &v1alpha1.StackStatus{Driver: v1alpha1.OperandReadiness{Ready: true, Version: driver},
			Toolkit: v1alpha1.OperandReadiness{Ready: true, Version: "1.17.8"}}
		if err := c.Status().Update(t.Context(), gn); err != nil {
			t.Fatalf("publishing GPUNode %s: %v", n, err)
		}
	}
}

// stackUpgrade is an upgrade of pool to driver 580.95.05, allowed by the matrix.
func stackUpgrade(name, poolName string) *v1alpha1.StackUpgrade {
	return &v1alpha1.StackUpgrade{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.StackUpgradeSpec{
			Pool:          poolName,
			Target:        v1alpha1.UpgradeTarget{Driver: "580.95.05"},
			VersionMatrix: []v1alpha1.VersionConstraint{{Driver: ">=580.65,<590", Toolkit: "1.17.*"}},
			Waves:         v1alpha1.WavePolicy{FailureDomainKeys: []string{"rack"}},
		},
	}
}

// waitAccepted waits until name's Accepted condition has status and reason, and returns
// the upgrade as then read.
func waitAccepted(t *testing.T, c client.Client, name string, status metav1.ConditionStatus, reason string) *v1alpha1.StackUpgrade {
	t.Helper()
	return waitPhase(t, c, name, "", status, reason)
}

// waitPhase is waitAccepted that also waits for the phase (unless "").
func waitPhase(t *testing.T, c client.Client, name string, phase v1alpha1.UpgradePhase, status metav1.ConditionStatus, reason string) *v1alpha1.StackUpgrade {
	t.Helper()
	su := &v1alpha1.StackUpgrade{}
	deadline := time.Now().Add(waitTimeout)
	for {
		last := "not read"
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, su); err != nil {
			last = err.Error()
		} else if cond := meta.FindStatusCondition(su.Status.Conditions, v1alpha1.ConditionUpgradeAccepted); cond != nil {
			if cond.Status == status && cond.Reason == reason && cond.ObservedGeneration == su.Generation &&
				(phase == "" || su.Status.Phase == phase) {
				return su
			}
			last = fmt.Sprintf("phase %s, Accepted %s %s: %s", su.Status.Phase, cond.Status, cond.Reason, cond.Message)
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for StackUpgrade %s phase %q Accepted=%s %s; last seen: %s", waitTimeout, name, phase, status, reason, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
