package nodeops

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// After any sequence of Add and Release, the unschedulable taint is present iff holds
// remain, not-accepted is present iff an acceptance hold exists, there is one hold per
// owner, and the foreign taints are exactly the ones the node started with, in order.
func TestHoldsAndTaintsInvariantsOverRandomSequences(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 11))
	owners := []string{v1alpha1.HoldOwnerAcceptance, v1alpha1.HoldOwnerRemediation, v1alpha1.HoldOwnerUpgrade, v1alpha1.HoldOwnerOperator, "team-a"}
	reasons := []string{"xid 79", "driver upgrade", "", "new node", "rack: move!"}
	start := []corev1.Taint{
		{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule},
		{Key: v1alpha1.TaintUnschedulable, Value: "theirs", Effect: corev1.TaintEffectNoExecute},
		{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute},
	}
	for seq := range 500 {
		var holds Holds
		taints := slices.Clone(start)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for step := range rng.IntN(40) {
			now = now.Add(time.Duration(rng.IntN(3)) * time.Second)
			owner := owners[rng.IntN(len(owners))]
			if rng.IntN(2) == 0 {
				holds, _ = Add(holds, Hold{Owner: owner, Reason: reasons[rng.IntN(len(reasons))], Since: now})
			} else {
				holds, _ = Release(holds, owner)
			}
			taints = DesiredTaints(taints, holds)
			checkInvariants(t, seq, step, start, holds, taints)
		}
	}
}

func checkInvariants(t *testing.T, seq, step int, start []corev1.Taint, holds Holds, taints []corev1.Taint) {
	t.Helper()
	has := func(key string) bool {
		return slices.ContainsFunc(taints, func(x corev1.Taint) bool { return Owns(x) && x.Key == key })
	}
	if has(v1alpha1.TaintUnschedulable) != (len(holds) > 0) {
		t.Fatalf("seq %d step %d: unschedulable taint %v with holds %v", seq, step, taints, holds)
	}
	_, accepting := holds.Find(v1alpha1.HoldOwnerAcceptance)
	if has(v1alpha1.TaintNotAccepted) != accepting {
		t.Fatalf("seq %d step %d: not-accepted taint %v with holds %v", seq, step, taints, holds)
	}
	if oldest, ok := holds.Oldest(); ok {
		i := slices.IndexFunc(taints, func(x corev1.Taint) bool { return Owns(x) && x.Key == v1alpha1.TaintUnschedulable })
		if taints[i].Value != SanitizeReason(oldest.Reason) {
			t.Fatalf("seq %d step %d: taint value %q, oldest hold %v", seq, step, taints[i].Value, oldest)
		}
	}
	var foreignNow []corev1.Taint
	for _, x := range taints {
		if !Owns(x) {
			foreignNow = append(foreignNow, x)
		}
	}
	if !TaintsEqual(foreignNow, start) {
		t.Fatalf("seq %d step %d: foreign taints %v, started as %v", seq, step, foreignNow, start)
	}
	owners := map[string]bool{}
	for _, h := range holds {
		if owners[h.Owner] {
			t.Fatalf("seq %d step %d: owner %q holds twice: %v", seq, step, h.Owner, holds)
		}
		owners[h.Owner] = true
	}
	if !slices.IsSortedFunc(holds, func(a, b Hold) int { return strings.Compare(a.Owner, b.Owner) }) {
		t.Fatalf("seq %d step %d: holds not sorted: %v", seq, step, holds)
	}
}
