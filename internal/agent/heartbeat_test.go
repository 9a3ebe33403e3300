package agent_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/testenv"
	"github.com/gpunode/gpunode/internal/xid"
)

// heartbeatOf is the GPUNode's latest heartbeat (zero when none).
func heartbeatOf(gn *v1alpha1.GPUNode) time.Time {
	if gn.Status.Agent == nil {
		return time.Time{}
	}
	return gn.Status.Agent.HeartbeatTime.Time
}

// withoutHeartbeat is gn without what a heartbeat changes: status.agent, the
// resourceVersion and the heartbeat manager's managed fields.
func withoutHeartbeat(gn *v1alpha1.GPUNode) *v1alpha1.GPUNode {
	out := gn.DeepCopy()
	out.ResourceVersion, out.Status.Agent = "", nil
	out.ManagedFields = slices.DeleteFunc(out.ManagedFields, func(m metav1.ManagedFieldsEntry) bool {
		return m.Manager == v1alpha1.FieldManagerAgentHeartbeat
	})
	return out
}

// waitHeartbeatAfter waits for a heartbeat later than after and returns it.
func waitHeartbeatAfter(t *testing.T, get func() (*v1alpha1.GPUNode, error), after time.Time, what string) time.Time {
	t.Helper()
	var got time.Time
	eventually(t, what, func() error {
		gn, err := get()
		if err != nil {
			return err
		}
		if got = heartbeatOf(gn); !got.After(after) {
			return fmt.Errorf("heartbeat %v, not after %v", got, after)
		}
		return nil
	})
	return got
}

// heartbeatStays fails the test if the GPUNode's heartbeat moves within d.
func heartbeatStays(t *testing.T, get func() (*v1alpha1.GPUNode, error), d time.Duration, why string) {
	t.Helper()
	gn, err := get()
	if err != nil {
		t.Fatal(err)
	}
	before := heartbeatOf(gn)
	time.Sleep(d)
	if gn, err = get(); err != nil {
		t.Fatal(err)
	}
	if after := heartbeatOf(gn); !after.Equal(before) {
		t.Errorf("%s: the heartbeat moved from %v to %v", why, before, after)
	}
}

func TestTheAgentWritesAHeartbeatUnderItsOwnFieldManagerUntilItStops(t *testing.T) {
	_, c := testenv.Start(t)
	name := newNode(t, c, nil)
	cfg, backend := simConfig(t, c, name)
	cfg.Heartbeat = cfg.Interval
	stop := start(t, cfg)
	get := func() (*v1alpha1.GPUNode, error) { return getGPUNode(c, name) }

	first := waitHeartbeatAfter(t, get, time.Time{}, "a first heartbeat")
	gn, err := get()
	if err != nil {
		t.Fatal(err)
	}
	if len(gn.Status.Inventory.GPUs) != 8 {
		t.Errorf("the first heartbeat came without the run's status: %d GPUs in the inventory", len(gn.Status.Inventory.GPUs))
	}
	owners := map[string]bool{}
	for _, m := range gn.ManagedFields {
		owners[m.Manager] = m.Subresource == "status" && m.FieldsV1 != nil
	}
	if !owners[v1alpha1.FieldManagerAgentHeartbeat] {
		t.Errorf("managed fields %v: want the heartbeat applied by %s", gn.ManagedFields, v1alpha1.FieldManagerAgentHeartbeat)
	}
	// A round that publishes a changed status keeps the heartbeat, which it leaves out.
	if err := backend.Inject(sim.Fault{GPU: 2, Type: sim.FaultXID, XID: 79}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "GPU 2 is published unhealthy with the heartbeat kept", func() error {
		gn, err := get()
		if err != nil {
			return err
		}
		if gn.Status.Health != v1alpha1.HealthUnhealthy || gn.Status.Agent == nil {
			return fmt.Errorf("health %q, agent %+v", gn.Status.Health, gn.Status.Agent)
		}
		return nil
	})
	waitHeartbeatAfter(t, get, first, "a later heartbeat (one every interval)")

	stop()
	heartbeatStays(t, get, 2500*time.Millisecond, "after the agent stopped")
}

// gatedBackend blocks every snapshot while its gate is closed, as a GPU read that hangs.
type gatedBackend struct {
	*failingBackend
	gate atomic.Pointer[chan struct{}]
}

func (b *gatedBackend) Snapshot(ctx context.Context) (*gpu.Snapshot, error) {
	if g := b.gate.Load(); g != nil {
		select {
		case <-*g:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return b.failingBackend.Snapshot(ctx)
}

func TestTheHeartbeatStopsWhileThePublishingLoopHangsAndResumesAfter(t *testing.T) {
	_, c := testenv.Start(t)
	name := newNode(t, c, nil)
	cfg, fb := simConfig(t, c, name)
	b := &gatedBackend{failingBackend: fb}
	cfg.Backend, cfg.Heartbeat = b, cfg.Interval
	start(t, cfg)
	get := func() (*v1alpha1.GPUNode, error) { return getGPUNode(c, name) }
	waitHeartbeatAfter(t, get, time.Time{}, "a first heartbeat")

	gate := make(chan struct{})
	b.gate.Store(&gate)
	time.Sleep(500 * time.Millisecond) // longer than the agent's 3 intervals and its backoff
	heartbeatStays(t, get, 2500*time.Millisecond, "while every GPU read hangs")

	gn, err := get()
	if err != nil {
		t.Fatal(err)
	}
	close(gate)
	b.gate.Store(nil)
	waitHeartbeatAfter(t, get, heartbeatOf(gn), "a heartbeat once the GPU reads answer again")
}

func TestTheHeartbeatGoesOnDuringALongAcceptanceRun(t *testing.T) {
	_, c := testenv.Start(t)
	name := newNode(t, c, nil)
	cfg, _ := simConfig(t, c, name)
	cfg.Heartbeat = cfg.Interval
	release := make(chan struct{})
	var reading atomic.Bool
	cfg.XIDs = func(ctx context.Context) ([]xid.Event, error) { // acceptance reads the kernel log
		reading.Store(true)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}
	start(t, cfg)
	get := func() (*v1alpha1.GPUNode, error) { return getGPUNode(c, name) }
	first := waitHeartbeatAfter(t, get, time.Time{}, "a first heartbeat")

	askForAcceptance(t, c, name, 1)
	eventually(t, "the acceptance run is under way", func() error {
		if !reading.Load() {
			return fmt.Errorf("not reading the kernel log yet")
		}
		return nil
	})
	// The run outlasts the loop's stall limit many times over; the heartbeat goes on.
	during := waitHeartbeatAfter(t, get, first.Add(time.Second), "heartbeats during the run")
	waitHeartbeatAfter(t, get, during, "more heartbeats during the run")
	close(release)
	acceptedAt(t, c, name, 1)
}
