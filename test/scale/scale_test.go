package scale

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
	"github.com/gpunode/gpunode/internal/controller/remediation"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/testenv"
)

// controllers are the controller names in the controller-runtime metrics.
var controllers = []string{acceptance.Name, remediation.Name}

// DESIGN.md's targets for 5,000 nodes.
const (
	targetRSSKiB    = 500 << 10
	targetDecisionS = 0.100
)

// faultEvery is the spacing of the fault injections.
const faultEvery = 100 * time.Millisecond

// The controller, started on a fleet of N settled nodes (GPUNODE_SCALE_NODES), reconciles
// every node with no hold placed, and then holds each of the 1% of nodes whose agent
// publishes an unhealthy GPU needing reset-gpu. It logs a `SCALE` line: memory, decision
// times per controller, time to the first full sync, and fault-to-hold latency; with
// GPUNODE_SCALE_ENFORCE=true missing DESIGN.md's targets fails the test.
func TestScaleTheControllerReconcilesTheFleetAndHoldsFaultyNodes(t *testing.T) {
	n := fleetSize(t)
	cfg, c := testenv.Start(t)
	ctx := t.Context()
	bin := gpunodeBinary(t)
	if err := createPolicy(ctx, c); err != nil {
		t.Fatal(err)
	}
	tp := makeTemplate(t, cfg, c)
	fast := fastClient(t, cfg)
	t0 := time.Now()
	if err := populate(ctx, fast, tp, n); err != nil {
		t.Fatalf("creating the fleet: %v", err)
	}
	populated := time.Since(t0)
	t.Logf("created %d nodes (Node, GPUNode, AcceptanceRecord each) in %s", n, populated.Round(time.Millisecond))

	p := startController(t, bin, cfg)
	started := time.Now()
	synced := waitSynced(t, p, n)
	syncTime := time.Since(started)
	cpuSync, err := p.cpuSeconds()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the controller reconciled every node in %s (%.1f s CPU)", syncTime.Round(time.Millisecond), cpuSync)
	time.Sleep(15 * time.Second) // steady state: nothing changes
	steady := p.memory(time.Now().Add(-10 * time.Second))
	checkSettled(t, fast, n)

	hw := watchHolds(t, cfg, n)
	before, err := scrape(ctx, p.metrics)
	if err != nil {
		t.Fatal(err)
	}
	faulty := injectFaults(t, fast, hw, n)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		_, missing, _ := hw.result()
		return len(missing) == 0, nil
	}); err != nil {
		_, missing, _ := hw.result()
		t.Errorf("%d of %d faulty nodes not held by remediation within 3 minutes: %v", len(missing), len(faulty), missing)
	}
	latency, _, unexpected := hw.result()
	if len(unexpected) > 0 {
		t.Errorf("remediation held nodes with no fault: %v", unexpected)
	}
	after, err := scrape(ctx, p.metrics)
	if err != nil {
		t.Fatal(err)
	}
	all := p.memory(time.Time{})
	r := report{n: n, populate: populated, sync: syncTime, cpuSync: cpuSync, faults: len(faulty),
		peakKiB: all[len(all)-1].hwm, steadyKiB: medianRSS(steady), holdP50: pct(latency, 0.50), holdP99: pct(latency, 0.99),
		holdMax: pct(latency, 1), heldCount: len(latency),
		settings: strings.TrimSpace(os.Getenv(envControllerArgs) + " GOMEMLIMIT=" + os.Getenv(envControllerMemLimit))}
	r.fill(synced, before, after)
	t.Log(r.line())
	t.Logf("SCALE-FOOTPRINT nodes=%d %s", n, footprint(t, fast))
	if enforce := strings.EqualFold(os.Getenv("GPUNODE_SCALE_ENFORCE"), "true"); enforce {
		r.enforce(t)
	}
}

// fastClient is a client for cfg without client-go's default rate limit, to build the
// fleet quickly.
func fastClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	fc := rest.CopyConfig(cfg)
	fc.QPS, fc.Burst = 5000, 10000
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(fc, client.Options{Scheme: s})
	if err != nil {
		t.Fatalf("creating the fleet's client: %v", err)
	}
	return c
}

// waitSynced waits until each controller has reconciled at least n times with nothing
// queued or in progress, three scrapes a second apart, and returns the last scrape.
func waitSynced(t *testing.T, p *controllerProcess, n int) metrics {
	t.Helper()
	var last metrics
	quiet := 0
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 45*time.Minute, true, func(ctx context.Context) (bool, error) {
		m, err := scrape(ctx, p.metrics)
		if err != nil {
			return false, nil //nolint:nilerr // the endpoint is not up yet
		}
		last = m
		for _, ctl := range controllers {
			if m.sum("controller_runtime_reconcile_total", map[string]string{"controller": ctl}) < float64(n) ||
				m.sum("workqueue_depth", map[string]string{"name": ctl}) > 0 ||
				m.sum("controller_runtime_active_workers", map[string]string{"controller": ctl}) > 0 {
				quiet = 0
				return false, nil
			}
		}
		quiet++
		return quiet >= 3, nil
	})
	if err != nil {
		var got []string
		for _, ctl := range controllers {
			got = append(got, fmt.Sprintf("%s: %.0f reconciles, depth %.0f", ctl,
				last.sum("controller_runtime_reconcile_total", map[string]string{"controller": ctl}),
				last.sum("workqueue_depth", map[string]string{"name": ctl})))
		}
		t.Fatalf("the controller did not reconcile all %d nodes within 45 minutes (%s): %v", n, strings.Join(got, "; "), err)
	}
	return last
}

// checkSettled fails t unless all n GPUNodes are in service and no Node is held.
func checkSettled(t *testing.T, c client.Client, n int) {
	t.Helper()
	var gns v1alpha1.GPUNodeList
	if err := c.List(t.Context(), &gns); err != nil {
		t.Fatalf("listing GPUNodes: %v", err)
	}
	var nodes corev1.NodeList
	if err := c.List(t.Context(), &nodes); err != nil {
		t.Fatalf("listing Nodes: %v", err)
	}
	var bad []string
	for _, gn := range gns.Items {
		if gn.Status.Phase != v1alpha1.PhaseInService {
			bad = append(bad, gn.Name+" is "+string(gn.Status.Phase))
		}
	}
	for _, nd := range nodes.Items {
		if hs, err := nodeops.ParseHolds(nd.Name, nd.Annotations[v1alpha1.AnnotationHolds]); err != nil || len(hs) > 0 {
			bad = append(bad, fmt.Sprintf("Node %s held: %v %v", nd.Name, hs, err))
		}
	}
	if len(gns.Items) != n || len(bad) > 0 {
		t.Fatalf("after the sync: %d GPUNodes (want %d); %d not settled, first: %v", len(gns.Items), n, len(bad), bad[:min(len(bad), 5)])
	}
}

// injectFaults writes, as an agent would, GPU 0 unhealthy (XID 79, reset-gpu) into the
// status of every hundredth node, faultEvery apart, arming hw with each write's time.
func injectFaults(t *testing.T, c client.Client, hw *holdWatch, n int) []string {
	t.Helper()
	k := max(1, n/100)
	var names []string
	for j := range k {
		name := nodeName(1 + j*(n/k))
		gn := &v1alpha1.GPUNode{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, gn); err != nil {
			t.Fatalf("reading GPUNode %s: %v", name, err)
		}
		base := gn.DeepCopy()
		now := metav1.Now()
		gn.Status.Health = v1alpha1.HealthUnhealthy
		gn.Status.GPUHealth[0].Health = v1alpha1.HealthUnhealthy
		gn.Status.GPUHealth[0].Action = v1alpha1.Action(v1alpha1.StepResetGPU)
		gn.Status.GPUHealth[0].Causes = []string{"xid-79"}
		gn.Status.GPUHealth[0].Since = now
		hw.arm(name, time.Now())
		if err := c.Status().Patch(t.Context(), gn, client.MergeFrom(base)); err != nil {
			t.Fatalf("injecting a fault into GPUNode %s: %v", name, err)
		}
		names = append(names, name)
		time.Sleep(faultEvery)
	}
	return names
}

func medianRSS(s []memSample) int {
	if len(s) == 0 {
		return 0
	}
	v := make([]int, len(s))
	for i := range s {
		v[i] = s[i].rss
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// pct is the q-quantile (nearest rank) of d; 0 when d is empty.
func pct(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
