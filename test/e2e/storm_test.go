package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// heldSampler counts the pool's held nodes (any owner's hold, as the budget does) every
// 25 ms until stopped, and keeps the largest count.
type heldSampler struct {
	max, samples atomic.Int64
	stop         func()
}

func (f *remFleet) sampleHeld() *heldSampler {
	s := &heldSampler{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			var nodes corev1.NodeList
			if err := f.c.List(ctx, &nodes, client.MatchingLabels{"pool": f.pool}); err == nil {
				held := int64(0)
				for _, n := range nodes.Items {
					if hs, err := nodeops.ParseHolds(n.Name, n.Annotations[v1alpha1.AnnotationHolds]); err == nil && len(hs) > 0 {
						held++
					}
				}
				s.samples.Add(1)
				if held > s.max.Load() {
					s.max.Store(held)
				}
			}
			time.Sleep(25 * time.Millisecond)
		}
	})
	s.stop = func() { cancel(); wg.Wait() }
	f.t.Cleanup(s.stop)
	return s
}

// 4 of 10 nodes (40%) report XID 95 at once in a pool whose budget is 2 held nodes and whose
// breaker trips above 20%: the breaker trips (status, RemediationPaused condition, Event),
// no step starts while it is open, and once a person resumes automation every faulty node is
// reset once, accepted and released, two at a time: the held count, sampled every 25 ms
// from before the faults to the end, never exceeds the budget.
func TestFortyPercentOfAPoolFaultingAtOnceTripsTheBreakerAndTheBudgetHolds(t *testing.T) {
	const budget = 2
	b := intstr.FromInt32(budget)
	f := newRemFleet(t, "rem-storm", 10, v1alpha1.RemediationPolicy{Budget: &v1alpha1.BudgetPolicy{MaxUnavailable: &b}})
	f.startControllers()
	f.inService(time.Minute)
	sampler := f.sampleHeld()

	faulty := f.nodes[:4]
	for _, n := range faulty {
		n.inject(t, 1, 95)
	}
	var pol v1alpha1.GPUNodePolicy
	f.eventually(30*time.Second, "the pool's breaker tripped", func() error {
		if err := f.c.Get(context.Background(), client.ObjectKey{Name: f.pool}, &pol); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(pol.Status.Conditions, v1alpha1.ConditionRemediationPaused); pol.Status.Breaker == nil || c == nil || c.Status != "True" {
			return fmt.Errorf("policy status %+v", pol.Status)
		}
		return nil
	})
	f.eventually(10*time.Second, "an Event says the breaker tripped", func() error {
		var evs eventsv1.EventList
		if err := f.c.List(context.Background(), &evs); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == f.pool && e.Reason == "CircuitBreakerOpen" {
				return nil
			}
		}
		return fmt.Errorf("no CircuitBreakerOpen Event among %d", len(evs.Items))
	})
	resets := func() (sum int64) {
		for _, n := range faulty {
			sum += n.steps.resets.Load()
		}
		return sum
	}
	atTrip := resets()
	time.Sleep(time.Second) // while the breaker is open nothing destructive starts
	if got := resets(); got != atTrip {
		t.Fatalf("%d resets ran while automation was paused", got-atTrip)
	}
	t.Logf("breaker: %s", pol.Status.Breaker.Reason)

	pol.Annotations = map[string]string{v1alpha1.AnnotationResumeRemediation: time.Now().Add(time.Second).UTC().Format(time.RFC3339)}
	if err := f.c.Update(context.Background(), &pol); err != nil {
		t.Fatal(err)
	}
	f.inService(2 * time.Minute)
	sampler.stop()
	for _, n := range faulty {
		if got := n.steps.resets.Load(); got != 1 {
			t.Errorf("node %s was reset %d times, want once", n.name, got)
		}
	}
	if got := sampler.max.Load(); got > budget {
		t.Fatalf("%d nodes were held at once, over the budget of %d", got, budget)
	}
	t.Logf("held nodes sampled %d times: at most %d held at once (budget %d)", sampler.samples.Load(), sampler.max.Load(), budget)
}
