package acceptance

import (
	"os"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

// The ownership table of docs/architecture.md names this controller for exactly the
// condition types it applies (the fleet test in test/e2e checks what a run writes; this
// catches a type no run happens to write).
func TestTheOwnershipTableNamesThisControllerForEveryConditionItApplies(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "<!-- field-ownership:begin -->")
	table, _, _ = strings.Cut(table, "<!-- field-ownership:end -->")
	listed := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.TrimSpace(cells[1]) != "GPUNode" {
			continue
		}
		field := strings.Trim(strings.TrimSpace(cells[2]), "`")
		if typ, ok := strings.CutPrefix(field, "status.conditions[type="); ok {
			listed[strings.TrimSuffix(typ, "]")] = strings.Trim(strings.TrimSpace(cells[3]), "`")
		}
	}
	for _, typ := range OwnedConditions {
		if got := listed[typ]; got != v1alpha1.FieldManagerAcceptance {
			t.Errorf("condition %s: the table names %q, want %s", typ, got, v1alpha1.FieldManagerAcceptance)
		}
	}
	for typ, owner := range listed {
		if owner == v1alpha1.FieldManagerAcceptance && !slices.Contains(OwnedConditions, typ) {
			t.Errorf("the table names %s for condition %s, which it does not apply", owner, typ)
		}
	}
	if listed[v1alpha1.ConditionGPUHealthy] != v1alpha1.FieldManagerAgent {
		t.Errorf("condition %s: the table names %q, want %s", v1alpha1.ConditionGPUHealthy, listed[v1alpha1.ConditionGPUHealthy], v1alpha1.FieldManagerAgent)
	}
}

// A GPUNode whose status an earlier version wrote with merge patches: after this
// controller's apply, no status field is owned by an update any more, and the fields it
// applies are its own.
func TestAnApplyDropsTheOwnershipEarlierMergePatchesLeftOnStatus(t *testing.T) {
	_, c := testenv.Start(t)
	ctx := t.Context()
	gn := &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "node-migrated"}, Spec: v1alpha1.GPUNodeSpec{NodeName: "node-migrated"}}
	if err := c.Create(ctx, gn); err != nil {
		t.Fatal(err)
	}
	base := gn.DeepCopy()
	gn.Status.Phase, gn.Status.ObservedGeneration = v1alpha1.PhaseAccepting, gn.Generation
	if err := c.Status().Patch(ctx, gn, client.MergeFrom(base), client.FieldOwner(legacyManager)); err != nil {
		t.Fatal(err)
	}
	if got := updates(gn.ManagedFields); len(got) != 1 {
		t.Fatalf("the merge patch left %d status update entries, want 1: %+v", len(got), gn.ManagedFields)
	}
	r := &Reconciler{Client: c, Clock: clock.RealClock{}}
	stored := gn.DeepCopy()
	gn.Status.Phase = v1alpha1.PhaseAccepting // the same value: the entries co-own it until now
	gn.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionInService, Status: metav1.ConditionFalse,
		Reason: string(v1alpha1.PhaseAccepting), Message: "held", LastTransitionTime: metav1.Now()}}
	if err := r.applyStatus(ctx, stored, gn); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.GPUNode{}
	if err := c.Get(ctx, client.ObjectKey{Name: gn.Name}, got); err != nil {
		t.Fatal(err)
	}
	if u := updates(got.ManagedFields); len(u) != 0 {
		t.Errorf("status update entries remain: %+v", u)
	}
	var applied bool
	for _, e := range got.ManagedFields {
		if e.Manager == v1alpha1.FieldManagerAcceptance && e.Operation == metav1.ManagedFieldsOperationApply &&
			strings.Contains(e.FieldsV1.GetRawString(), `"f:phase"`) {
			applied = true
		}
	}
	if !applied || got.Status.Phase != v1alpha1.PhaseAccepting {
		t.Errorf("phase %s, managedFields %+v; want Accepting, applied by %s", got.Status.Phase, got.ManagedFields, v1alpha1.FieldManagerAcceptance)
	}
}

func updates(mf []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, e := range mf {
		if e.Subresource == "status" && e.Operation == metav1.ManagedFieldsOperationUpdate {
			out = append(out, e)
		}
	}
	return out
}
