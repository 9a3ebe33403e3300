package agent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/testenv"
)

// flaky wraps a client: calls of the named operations fail with 503 while failures are
// left (all operations when none are named), and every call is counted.
type flaky struct {
	mu     sync.Mutex
	ops    map[string]bool
	left   int
	failed int
	calls  map[string]int
}

func (f *flaky) call(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	if f.left > 0 && (len(f.ops) == 0 || f.ops[op]) {
		f.left--
		f.failed++
		return apierrors.NewServiceUnavailable("the API server is down (injected) during " + op)
	}
	return nil
}

// breakNext makes the next n calls of ops fail.
func (f *flaky) breakNext(n int, ops ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.left, f.ops = n, map[string]bool{}
	for _, op := range ops {
		f.ops[op] = true
	}
}

func (f *flaky) count(op string) (calls, failed, left int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op], f.failed, f.left
}

func kindOf(obj runtime.Object) string { return fmt.Sprintf("%T", obj) }

func flakyClient(t *testing.T, cfg *rest.Config) (client.Client, *flaky) {
	t.Helper()
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	f := &flaky{calls: map[string]int{}}
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := f.call("get " + kindOf(obj)); err != nil {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			op := "list "
			lo := &client.ListOptions{}
			lo.ApplyOptions(opts)
			if lo.Raw != nil && lo.Raw.ResourceVersion == "0" {
				op = "list (watch cache) " // the monitor's thresholds every round, not an acceptance run
			}
			if err := f.call(op + kindOf(list)); err != nil {
				return err
			}
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := f.call("create " + kindOf(obj)); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if err := f.call("patch " + kindOf(obj)); err != nil {
				return err
			}
			return c.Patch(ctx, obj, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if err := f.call("apply"); err != nil {
				return err
			}
			return c.Apply(ctx, obj, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			if err := f.call("apply " + sub); err != nil {
				return err
			}
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	}), f
}

const (
	opCreateRecord = "create *v1alpha1.AcceptanceRecord"
	opApplyStatus  = "apply status"
	opListPolicies = "list *v1alpha1.GPUNodePolicyList"
	opGetNode      = "get *v1.Node" // once every round
	opGetGPUNode   = "get *v1alpha1.GPUNode"
	// opFollowPolicies is the monitor's lookup of its thresholds (from the watch cache).
	opFollowPolicies = "list (watch cache) *v1alpha1.GPUNodePolicyList"
	waitForAnyCalls  = 3
)

func TestAnAgentStartedWhileTheAPIServerIsDownCatchesUpOnceItAnswers(t *testing.T) {
	restCfg, c := testenv.Start(t)
	name := newNode(t, c, nil)
	fc, f := flakyClient(t, restCfg)
	f.breakNext(25) // every call fails, the agent backs off and retries
	cfg, _ := simConfig(t, fc, name)
	start(t, cfg)
	eventually(t, "the GPUNode is published with its 8 GPUs", func() error {
		gn, err := getGPUNode(c, name)
		if err != nil {
			return err
		}
		if gn.Status.GPUCount != 8 {
			return fmt.Errorf("gpuCount %d", gn.Status.GPUCount)
		}
		return nil
	})
	if _, failed, left := f.count(""); failed != 25 || left != 0 {
		t.Errorf("%d calls failed and %d failures are left; want all 25 injected failures used", failed, left)
	}
	if holds, err := (nodeops.Ops{Client: c}).Get(context.Background(), name); err != nil || len(holds) != 1 {
		t.Errorf("holds = %+v (%v), want the acceptance hold", holds, err)
	}
}

func TestARecordThatCouldNotBeCreatedIsCreatedLaterWithoutRerunningAcceptance(t *testing.T) {
	restCfg, c := testenv.Start(t)
	name := newNode(t, c, nil)
	fc, f := flakyClient(t, restCfg)
	cfg, backend := simConfig(t, fc, name)
	start(t, cfg)
	eventually(t, "the status is published", func() error {
		gn, err := getGPUNode(c, name)
		if err == nil && gn.Status.GPUCount != 8 {
			err = fmt.Errorf("gpuCount %d", gn.Status.GPUCount)
		}
		return err
	})
	f.breakNext(12, opCreateRecord, opApplyStatus)
	askForAcceptance(t, c, name, 1)
	if err := backend.Inject(sim.Fault{GPU: 5, Type: sim.FaultXID, XID: 79}); err != nil {
		t.Fatal(err)
	}
	last := acceptedAt(t, c, name, 1)
	eventually(t, "GPU 5's fault during the outage is published", func() error {
		gn, err := getGPUNode(c, name)
		if err != nil {
			return err
		}
		if h := gn.Status.GPUHealth; len(h) != 8 || h[5].Health != v1alpha1.HealthUnhealthy {
			return fmt.Errorf("GPU health %+v", h)
		}
		return nil
	})
	records := recordsOf(t, c, name)
	if len(records) != 1 || records[0].Name != last.RecordName {
		t.Errorf("records %d (lastAcceptance names %s), want exactly that one", len(records), last.RecordName)
	}
	creates, failed, left := f.count(opCreateRecord)
	if left != 0 || failed != 12 || creates < 2 {
		t.Errorf("record creation tried %d times, %d injected failures used, %d left; want retries until all 12 were used", creates, failed, left)
	}
	if runs, _, _ := f.count(opListPolicies); runs != 1 {
		t.Errorf("acceptance ran %d times (policy lookups), want once: a failed publication must not rerun it", runs)
	}
}

func TestARestartedAgentNeitherHoldsAgainNorRerunsAcceptanceForTheSameGeneration(t *testing.T) {
	restCfg, c := testenv.Start(t)
	name := newNode(t, c, nil)
	cfg, _ := simConfig(t, c, name)
	stop := start(t, cfg)
	eventually(t, "the GPUNode exists", func() error { _, err := getGPUNode(c, name); return err })
	askForAcceptance(t, c, name, 1)
	first := acceptedAt(t, c, name, 1)
	stop()
	// The controller accepted the node and released its hold.
	if err := (nodeops.Ops{Client: c}).Release(context.Background(), name, v1alpha1.HoldOwnerAcceptance); err != nil {
		t.Fatal(err)
	}

	fc, f := flakyClient(t, restCfg)
	cfg2, _ := simConfig(t, fc, name)
	start(t, cfg2)
	eventually(t, "the restarted agent has run several rounds", func() error {
		if n, _, _ := f.count(opGetNode); n < waitForAnyCalls {
			return fmt.Errorf("%d rounds", n)
		}
		return nil
	})
	if holds, err := (nodeops.Ops{Client: c}).Get(context.Background(), name); err != nil || len(holds) != 0 {
		t.Errorf("holds after restart = %+v (%v), want none", holds, err)
	}
	if n, _, _ := f.count(opListPolicies); n != 0 {
		t.Errorf("the restarted agent ran acceptance %d times for an answered generation", n)
	}
	gn, err := getGPUNode(c, name)
	if err != nil {
		t.Fatal(err)
	}
	if l := gn.Status.LastAcceptance; l == nil || l.RecordName != first.RecordName {
		t.Errorf("lastAcceptance after restart = %+v, want the first run's %s kept", l, first.RecordName)
	}
	if n := len(recordsOf(t, c, name)); n != 1 {
		t.Errorf("%d records, want 1", n)
	}
}
