package agent_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodepolicy"
	"github.com/gpunode/gpunode/internal/testenv"
)

// The health monitor judges by the thresholds of the policy that governs the node, as
// acceptance does, and follows the policy when it changes between rounds: the simulated
// H100s run at 33-37 °C, healthy under the default limit (slowdown - 5 °C), too hot under a
// policy's maxTemperatureC of 30.
func TestTheMonitorFollowsTheThresholdsOfTheGoverningPolicy(t *testing.T) {
	_, c := testenv.Start(t)
	pool := fmt.Sprintf("pool-%d", nodeSeq.Add(1))
	name := newNode(t, c, map[string]string{"pool": pool})
	cfg, _ := simConfig(t, c, name)
	start(t, cfg)
	gpus := func(want v1alpha1.Health, cause string) func() error {
		return func() error {
			gn, err := getGPUNode(c, name)
			if err != nil {
				return err
			}
			if len(gn.Status.GPUHealth) != 8 {
				return fmt.Errorf("%d GPUs in the status, want 8", len(gn.Status.GPUHealth))
			}
			for _, g := range gn.Status.GPUHealth {
				if g.Health != want || (cause != "" && !slices.Contains(g.Causes, cause)) {
					return fmt.Errorf("GPU %d is %s (causes %v), want %s with cause %q", g.Index, g.Health, g.Causes, want, cause)
				}
			}
			return nil
		}
	}
	eventually(t, "every GPU is healthy under the built-in thresholds", gpus(v1alpha1.Health("healthy"), ""))

	limit := int32(30)
	p := &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: "cool-" + pool}, Spec: v1alpha1.GPUNodePolicySpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}},
		Acceptance:   v1alpha1.AcceptanceSettings{Thresholds: v1alpha1.Thresholds{MaxTemperatureC: &limit}},
	}}
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every GPU is degraded by the policy's temperature limit", gpus(v1alpha1.Health("degraded"), "temperature-high"))
}

// An agent that watches (its client can) reads neither its GPUNode nor the policies every
// round: the watches keep the GPUNode and tell when a policy changed. A policy created
// later is still followed within rounds.
func TestAWatchingAgentReadsItsGPUNodeAndThePoliciesOnlyWhenTheyChange(t *testing.T) {
	restCfg, c := testenv.Start(t)
	pool := fmt.Sprintf("pool-%d", nodeSeq.Add(1))
	name := newNode(t, c, map[string]string{"pool": pool})
	fc, f := flakyClient(t, restCfg)
	cfg, _ := simConfig(t, fc, name)
	start(t, cfg)
	eventually(t, "the GPUNode is published with its 8 GPUs", func() error {
		gn, err := getGPUNode(c, name)
		if err != nil {
			return err
		}
		if len(gn.Status.GPUHealth) != 8 {
			return fmt.Errorf("%d GPUs in the status", len(gn.Status.GPUHealth))
		}
		return nil
	})
	rounds0, _, _ := f.count(opGetNode)
	gets0, _, _ := f.count(opGetGPUNode)
	lists0, _, _ := f.count(opFollowPolicies)
	eventually(t, "20 more rounds", func() error {
		if n, _, _ := f.count(opGetNode); n < rounds0+20 {
			return fmt.Errorf("%d rounds", n-rounds0)
		}
		return nil
	})
	rounds, _, _ := f.count(opGetNode)
	gets, _, _ := f.count(opGetGPUNode)
	lists, _, _ := f.count(opFollowPolicies)
	// A watch may start again once in a while on a loaded API server; each start costs one
	// read of either. Every round reading both would be 20 or more.
	if gets-gets0 > 3 || lists-lists0 > 3 {
		t.Errorf("over %d rounds the agent read its GPUNode %d times and listed the policies %d times, want at most 3 each",
			rounds-rounds0, gets-gets0, lists-lists0)
	}

	limit := int32(30)
	p := &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: "cool-" + pool}, Spec: v1alpha1.GPUNodePolicySpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}},
		Acceptance:   v1alpha1.AcceptanceSettings{Thresholds: v1alpha1.Thresholds{MaxTemperatureC: &limit}},
	}}
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every GPU is degraded by the new policy's temperature limit", func() error {
		gn, err := getGPUNode(c, name)
		if err != nil {
			return err
		}
		for _, g := range gn.Status.GPUHealth {
			if g.Health != v1alpha1.Health("degraded") || !slices.Contains(g.Causes, "temperature-high") {
				return fmt.Errorf("GPU %d is %s (causes %v), want degraded with cause temperature-high", g.Index, g.Health, g.Causes)
			}
		}
		return nil
	})
}

// The DRA plugin is handed the governing policy each time it is chosen, and so follows a
// change of its spec.dra between rounds: the built-in defaults first (no policy selects the node),
// then the policy that asks for NoExecute.
func TestTheDRAPluginIsHandedTheGoverningPolicyWhenItIsChosen(t *testing.T) {
	_, c := testenv.Start(t)
	pool := fmt.Sprintf("pool-%d", nodeSeq.Add(1))
	name := newNode(t, c, map[string]string{"pool": pool})
	cfg, _ := simConfig(t, c, name)
	var mu sync.Mutex
	var effects []string
	cfg.OnPolicy = func(gp *v1alpha1.GPUNodePolicy) {
		mu.Lock()
		defer mu.Unlock()
		effects = append(effects, nodepolicy.DRAUnhealthyEffect(gp))
	}
	handed := func(effect string) func() error {
		return func() error {
			mu.Lock()
			defer mu.Unlock()
			if len(effects) == 0 || effects[len(effects)-1] != effect {
				return fmt.Errorf("the plugin was handed %v, want %s last", effects, effect)
			}
			return nil
		}
	}
	start(t, cfg)
	eventually(t, "the built-in defaults' NoSchedule handed over", handed(v1alpha1.DRAEffectNoSchedule))
	p := &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: "evict-" + pool}, Spec: v1alpha1.GPUNodePolicySpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}},
		DRA:          v1alpha1.DRAPolicy{UnhealthyEffect: v1alpha1.DRAEffectNoExecute},
	}}
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), p) })
	eventually(t, "the policy's NoExecute handed over", handed(v1alpha1.DRAEffectNoExecute))
}
