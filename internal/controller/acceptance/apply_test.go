package acceptance

import (
	"os"
	"slices"
	"strings"
	"testing"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
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
