package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/testenv"
)

// holdWatch records, from a watch on the Nodes, when remediation's hold first appears on
// each armed node.
type holdWatch struct {
	mu    sync.Mutex
	armed map[string]time.Time // node -> injection time
	held  map[string]time.Time // node -> when the hold was first seen
	seen  map[string]time.Time // node -> when its GPUNode first showed an unhealthy GPU
	// done and donePub are the completed injections' latencies; doneCtl is, of those whose
	// unhealthy GPU was seen first, the time from that to the hold (the controller's part).
	done, donePub, doneCtl []time.Duration
}

// watchHolds follows the Nodes until the test ends.
func watchHolds(t *testing.T) *holdWatch {
	t.Helper()
	cfg, _ := testenv.Start(t)
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	hw := &holdWatch{armed: map[string]time.Time{}, held: map[string]time.Time{}, seen: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	follow := func(list client.ObjectList, observe func(runtime.Object, time.Time)) {
		started := make(chan struct{})
		wg.Go(func() {
			first := true
			for ctx.Err() == nil {
				w, err := wc.Watch(ctx, list)
				if first {
					close(started)
					first = false
				}
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				for ev := range w.ResultChan() {
					observe(ev.Object, time.Now())
				}
				w.Stop()
			}
		})
		<-started
	}
	follow(&corev1.NodeList{}, func(o runtime.Object, at time.Time) {
		if n, ok := o.(*corev1.Node); ok {
			hw.observe(n, at)
		}
	})
	follow(&v1alpha1.GPUNodeList{}, func(o runtime.Object, at time.Time) {
		if gn, ok := o.(*v1alpha1.GPUNode); ok {
			hw.observeHealth(gn, at)
		}
	})
	return hw
}

// observeHealth notes when an armed node's GPUNode first shows an unhealthy GPU: the
// agent's part of the latency.
func (hw *holdWatch) observeHealth(gn *v1alpha1.GPUNode, at time.Time) {
	if !slices.ContainsFunc(gn.Status.GPUHealth, func(g v1alpha1.GPUHealth) bool { return g.Health == v1alpha1.HealthUnhealthy }) {
		return
	}
	hw.mu.Lock()
	defer hw.mu.Unlock()
	if _, armed := hw.armed[gn.Name]; armed {
		if _, ok := hw.seen[gn.Name]; !ok {
			hw.seen[gn.Name] = at
		}
	}
}

func (hw *holdWatch) observe(n *corev1.Node, at time.Time) {
	hs, err := nodeops.ParseHolds(n.Name, n.Annotations[v1alpha1.AnnotationHolds])
	if err != nil {
		return
	}
	if _, ok := hs.Find(v1alpha1.HoldOwnerRemediation); !ok {
		return
	}
	hw.mu.Lock()
	defer hw.mu.Unlock()
	inj, armed := hw.armed[n.Name]
	if _, seen := hw.held[n.Name]; !armed || seen {
		return
	}
	hw.held[n.Name] = at
	hw.done = append(hw.done, at.Sub(inj))
	if s, ok := hw.seen[n.Name]; ok {
		hw.donePub = append(hw.donePub, s.Sub(inj))
		hw.doneCtl = append(hw.doneCtl, at.Sub(s))
	}
}

// arm records an injection on node at at; the hold seen next completes it.
func (hw *holdWatch) arm(node string, at time.Time) {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	hw.armed[node] = at
	delete(hw.held, node)
	delete(hw.seen, node)
}

// latencies returns the injection-to-hold latencies of the latest injection of each node,
// the injection-to-published-health latencies, and the nodes not held yet.
func (hw *holdWatch) latencies() (hold, published []time.Duration, missing []string) {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	for node := range hw.armed {
		if _, ok := hw.held[node]; !ok {
			missing = append(missing, node)
		}
	}
	return hw.done, hw.donePub, missing
}

// all returns every completed injection's latencies: to the hold, to the published
// health, and from the published health to the hold.
func (hw *holdWatch) all() (hold, published, controller []time.Duration) {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	return slices.Clone(hw.done), slices.Clone(hw.donePub), slices.Clone(hw.doneCtl)
}

// XID 79 (the GPU fell off the bus) on a running node holds it: 100 injections, one on
// each node of a pool of 100, 100 ms apart, while the nodes injected before are being
// recovered (evidence, reboot, acceptance, release) by the same controller, as in a fleet.
// Every injection must end in remediation's hold; the latency from the injection to the
// hold seen through a watch on the Nodes is reported (a BENCH line), not asserted.
func TestXID79HoldsTheNodeAndTheLatencyIsMeasuredOver100Injections(t *testing.T) {
	const nodes, injections = 100, 100
	all := intstr.FromString("100%")
	f := newRemFleetEvery(t, "rem-xid79", nodes, 500*time.Millisecond, v1alpha1.RemediationPolicy{
		Budget:  &v1alpha1.BudgetPolicy{MaxUnavailable: &all},
		Breaker: &v1alpha1.BreakerPolicy{Threshold: &all},
	})
	hw := watchHolds(t)
	dumpRequestCounts(t, f.cfg)
	f.startControllers()
	f.inService(5 * time.Minute) // 100 nodes accepted on a loaded 2-core CI machine

	start := time.Now()
	for i, n := range f.nodes[:injections] {
		hw.arm(n.name, time.Now())
		n.inject(t, i%8, 79)
		time.Sleep(100 * time.Millisecond)
	}
	f.eventually(3*time.Minute, "every injected node held by remediation", func() error {
		if _, _, missing := hw.latencies(); len(missing) > 0 {
			return fmt.Errorf("not held yet: %v", missing)
		}
		return nil
	})
	hw.writeTimeline(t)
	hold, published, controller := hw.all()
	if len(hold) != injections {
		t.Fatalf("%d latencies measured, want %d", len(hold), injections)
	}
	recovered := 0
	for _, n := range f.nodes {
		if n.steps.reboots.Load() == 1 && f.nodeInService(n.name) == nil {
			recovered++
		}
	}
	slices.Sort(hold)
	slices.Sort(published)
	slices.Sort(controller)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	if len(published) > 0 {
		t.Logf("BENCH health-published-latency xid=79 samples=%d p50_ms=%.1f p99_ms=%.1f (injection to the GPUNode showing the GPU unhealthy: the agent's part)",
			len(published), ms(percentile(published, 50)), ms(percentile(published, 99)))
		t.Logf("BENCH health-to-hold-latency xid=79 samples=%d p50_ms=%.1f p99_ms=%.1f (the GPUNode showing the GPU unhealthy to the hold: the controller's part)",
			len(controller), ms(percentile(controller, 50)), ms(percentile(controller, 99)))
	}
	t.Logf("BENCH hold-latency xid=79 injections=%d nodes=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f min_ms=%.1f (injections %.1f s; %d nodes already rebooted, accepted and released when the last hold was seen)",
		len(hold), nodes, ms(percentile(hold, 50)), ms(percentile(hold, 99)), ms(hold[len(hold)-1]), ms(hold[0]), time.Since(start).Seconds(), recovered)
}

// percentile is the nearest-rank percentile p of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
