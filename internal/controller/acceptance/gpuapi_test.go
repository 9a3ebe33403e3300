package acceptance

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

func TestDecideGPUAPISwitch(t *testing.T) {
	held := at.Add(-time.Minute)
	dp, dra := v1alpha1.GPUAPIDevicePlugin, v1alpha1.GPUAPIDRA
	type want struct {
		hold, release, request bool
		status                 metav1.ConditionStatus
		reason                 string
	}
	cases := []struct {
		name string
		f    SwitchFacts
		want want
	}{
		{"an agent that reports no API is never held", SwitchFacts{Label: dra}, want{}},
		{"an agent that stopped reporting its API releases the switch's hold", SwitchFacts{Label: dra, Held: true}, want{release: true}},
		{"a node seen for the first time settles on what its agent runs", SwitchFacts{Reported: dp}, want{status: "True", reason: ReasonServedByDevicePlugin}},
		{"a labelled node running its label's API is served by it", SwitchFacts{Label: dra, Reported: dra, Settled: dra}, want{status: "True", reason: ReasonServedByDRA}},
		{"a label that names another API than the agent runs holds the node", SwitchFacts{Label: dra, Reported: dp, Settled: dp},
			want{hold: true, status: "False", reason: HoldReasonGPUAPISwitch}},
		{"a label naming no API is the agent's own choice", SwitchFacts{Label: "both", Reported: dp, Settled: dp}, want{status: "True", reason: ReasonServedByDevicePlugin}},
		{"an agent that changed over before the label was seen is held for acceptance", SwitchFacts{Reported: dra, Settled: dp},
			want{hold: true, status: "False", reason: HoldReasonGPUAPISwitch}},
		{"once the agent runs the new API acceptance is asked for", SwitchFacts{Label: dra, Reported: dra, Held: true, HeldSince: held, Answered: held.Add(-time.Hour)},
			want{hold: true, request: true, status: "False", reason: HoldReasonGPUAPISwitch}},
		{"an outstanding request is waited for", SwitchFacts{Label: dra, Reported: dra, Held: true, HeldSince: held, Outstanding: true, Generation: 3},
			want{hold: true, status: "False", reason: HoldReasonGPUAPISwitch}},
		{"an answer given before the hold does not release it", SwitchFacts{Label: dra, Reported: dra, Held: true, HeldSince: held, Answered: held, Generation: 2},
			want{hold: true, request: true, status: "False", reason: HoldReasonGPUAPISwitch}},
		{"an answer after the hold releases it and settles on the new API", SwitchFacts{Label: dra, Reported: dra, Held: true, HeldSince: held, Answered: held.Add(time.Second), Generation: 3},
			want{release: true, status: "True", reason: ReasonServedByDRA}},
		{"a switch back before the agent changed over waits for it again", SwitchFacts{Label: dp, Reported: dra, Held: true, HeldSince: held},
			want{hold: true, status: "False", reason: HoldReasonGPUAPISwitch}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideGPUAPISwitch(tc.f)
			got := want{hold: d.Hold, release: d.Release, request: d.RequestAcceptance, status: d.Status, reason: d.Reason}
			if got != tc.want {
				t.Errorf("DecideGPUAPISwitch(%+v) = %+v (%q), want %+v", tc.f, got, d.Message, tc.want)
			}
		})
	}
}

// reportGPUAPI plays the agent reporting the API it serves the GPUs through.
func reportGPUAPI(t *testing.T, c client.Client, name, api string) {
	t.Helper()
	err := retryOnConflict(t.Context(), func() error {
		gn := &v1alpha1.GPUNode{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, gn); err != nil {
			return err
		}
		gn.Status.GPUAPI = api
		return c.Status().Update(t.Context(), gn)
	})
	if err != nil {
		t.Fatalf("the agent of %s reports %s: %v", name, api, err)
	}
}

// answerAt answers generation gen with a passing record, given at when by the agent's clock.
func answerAt(t *testing.T, c client.Client, name string, gen int64, when time.Time) {
	t.Helper()
	recName := fmt.Sprintf("%s-%d", name, gen)
	if err := c.Create(t.Context(), record(recName, name, gen, v1alpha1.AcceptancePassed, 8)); err != nil {
		t.Fatal(err)
	}
	err := retryOnConflict(t.Context(), func() error {
		gn := &v1alpha1.GPUNode{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, gn); err != nil {
			return err
		}
		gn.Status.LastAcceptance = &v1alpha1.AcceptanceSummary{RecordName: recName, Generation: gen, Result: v1alpha1.AcceptancePassed, Time: metav1.NewTime(when)}
		return c.Status().Update(t.Context(), gn)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func heldFor(gn *v1alpha1.GPUNode, owner string) bool {
	for _, h := range gn.Status.Holds {
		if h.Owner == owner {
			return true
		}
	}
	return false
}

func TestANodeSwitchedFromTheDevicePluginToDRAIsHeldUntilItIsAcceptedOnDRA(t *testing.T) {
	c := startController(t)
	createPolicy(t, c, policy("switch-fleet", 10, map[string]string{"fleet": "switch"}, 8))
	join(t, c, "node-switch", 8, map[string]string{"fleet": "switch"})
	reportGPUAPI(t, c, "node-switch", v1alpha1.GPUAPIDevicePlugin)
	waitGPUNode(t, c, "node-switch", "acceptance to be requested", func(gn *v1alpha1.GPUNode) bool { return gn.Spec.AcceptanceGeneration == 1 })
	answerAt(t, c, "node-switch", 1, time.Now())
	waitGPUNode(t, c, "node-switch", "InService on the device plugin", func(gn *v1alpha1.GPUNode) bool {
		return gn.Status.Phase == v1alpha1.PhaseInService && condition(gn, ConditionGPUAPI).Reason == ReasonServedByDevicePlugin
	})

	// A person labels the node for DRA (the pass comes with the agent's next status).
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-switch"}}
	if err := c.Patch(t.Context(), node, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"gpunode.dev/gpu-api":"dra"}}}`))); err != nil {
		t.Fatal(err)
	}
	touch := &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "node-switch"}}
	if err := c.Patch(t.Context(), touch, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"test/touch":"1"}}}`))); err != nil {
		t.Fatal(err)
	}
	gn := waitGPUNode(t, c, "node-switch", "held for the switch", func(gn *v1alpha1.GPUNode) bool { return heldFor(gn, HoldOwnerGPUAPI) })
	if cond := condition(gn, ConditionGPUAPI); cond.Status != metav1.ConditionFalse || cond.Reason != HoldReasonGPUAPISwitch {
		t.Errorf("condition GPUAPI %+v while the agent still runs the device plugin", cond)
	}
	if gn.Spec.AcceptanceGeneration != 1 {
		t.Errorf("acceptance generation %d requested before the agent changed over", gn.Spec.AcceptanceGeneration)
	}
	waitGPUNode(t, c, "node-switch", "phase Upgrading while it switches", func(gn *v1alpha1.GPUNode) bool {
		return gn.Status.Phase == v1alpha1.PhaseUpgrading
	})

	reportGPUAPI(t, c, "node-switch", v1alpha1.GPUAPIDRA)
	gn = waitGPUNode(t, c, "node-switch", "acceptance requested on DRA", func(gn *v1alpha1.GPUNode) bool { return gn.Spec.AcceptanceGeneration == 2 })
	if gn.Spec.AcceptanceReason != "GPU API switched to dra" || !heldFor(gn, HoldOwnerGPUAPI) {
		t.Errorf("acceptance reason %q, holds %+v", gn.Spec.AcceptanceReason, gn.Status.Holds)
	}
	answerAt(t, c, "node-switch", 2, time.Now().Add(2*time.Second)) // the agent's run ends after the hold
	gn = waitGPUNode(t, c, "node-switch", "InService on DRA", func(gn *v1alpha1.GPUNode) bool {
		return gn.Status.Phase == v1alpha1.PhaseInService && condition(gn, ConditionGPUAPI).Reason == ReasonServedByDRA
	})
	if heldFor(gn, HoldOwnerGPUAPI) || len(taints(t, c, "node-switch")) != 0 {
		t.Errorf("after the switch: holds %+v, taints %v", gn.Status.Holds, taints(t, c, "node-switch"))
	}
}

func TestANodeWhoseAgentChangedOverFirstIsHeldAndAcceptedOnItsNewAPI(t *testing.T) {
	c := startController(t)
	createPolicy(t, c, policy("switched-fleet", 10, map[string]string{"fleet": "switched"}, 8))
	join(t, c, "node-switched", 8, map[string]string{"fleet": "switched"})
	reportGPUAPI(t, c, "node-switched", v1alpha1.GPUAPIDevicePlugin)
	waitGPUNode(t, c, "node-switched", "acceptance to be requested", func(gn *v1alpha1.GPUNode) bool { return gn.Spec.AcceptanceGeneration == 1 })
	answerAt(t, c, "node-switched", 1, time.Now())
	waitGPUNode(t, c, "node-switched", "InService on the device plugin", func(gn *v1alpha1.GPUNode) bool {
		return gn.Status.Phase == v1alpha1.PhaseInService && condition(gn, ConditionGPUAPI).Reason == ReasonServedByDevicePlugin
	})

	reportGPUAPI(t, c, "node-switched", v1alpha1.GPUAPIDRA) // no label: the agent's own choice
	gn := waitGPUNode(t, c, "node-switched", "held and asked for acceptance on DRA", func(gn *v1alpha1.GPUNode) bool {
		return heldFor(gn, HoldOwnerGPUAPI) && gn.Spec.AcceptanceGeneration == 2
	})
	if cond := condition(gn, ConditionGPUAPI); cond.Reason != HoldReasonGPUAPISwitch {
		t.Errorf("condition GPUAPI %+v during the switch", cond)
	}
	answerAt(t, c, "node-switched", 2, time.Now().Add(2*time.Second))
	waitGPUNode(t, c, "node-switched", "released on DRA", func(gn *v1alpha1.GPUNode) bool {
		return !heldFor(gn, HoldOwnerGPUAPI) && gn.Status.Phase == v1alpha1.PhaseInService && condition(gn, ConditionGPUAPI).Reason == ReasonServedByDRA
	})
}
