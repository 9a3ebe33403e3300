package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// owners is docs/architecture.md's field-ownership table: field path -> owner, for one kind.
type owners map[string]string

// readOwnership parses the table between the field-ownership markers of
// docs/architecture.md, keeping the rows of kind with exactly one owner.
func readOwnership(t *testing.T, kind string) owners {
	t.Helper()
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := bytes.Cut(doc, []byte("<!-- field-ownership:begin -->"))
	table, _, ok2 := bytes.Cut(table, []byte("<!-- field-ownership:end -->"))
	if !ok || !ok2 {
		t.Fatal("docs/architecture.md has no field-ownership table between its markers")
	}
	row := regexp.MustCompile("^\\| *([A-Za-z]+) *\\| *`([^`]+)`[^|]*\\| *(.+?) *\\|$")
	out := owners{}
	sc := bufio.NewScanner(bytes.NewReader(table))
	for sc.Scan() {
		m := row.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil || m[1] != kind {
			continue
		}
		if strings.Count(m[3], "`") == 2 {
			out[m[2]] = strings.Trim(m[3], "`")
		}
	}
	if len(out) == 0 {
		t.Fatalf("the field-ownership table has no %s rows", kind)
	}
	return out
}

// ownerOf is the owner of leaf: the longest row that is leaf or one of its parents.
func (o owners) ownerOf(leaf string) (row, owner string, ok bool) {
	for p, who := range o {
		if (leaf == p || strings.HasPrefix(leaf, p+".") || strings.HasPrefix(leaf, p+"[")) && len(p) > len(row) {
			row, owner, ok = p, who, true
		}
	}
	return row, owner, ok
}

// writer is one manager's hold on a field.
type writer struct {
	manager   string
	operation metav1.ManagedFieldsOperationType
}

func (w writer) String() string { return w.manager + " (" + string(w.operation) + ")" }

// leaves walks a managedFields FieldsV1 set and calls add with each leaf's path, in the
// table's notation: fields dotted, list items by key ([type=Accepted]), set items by value.
func leaves(prefix string, set map[string]any, add func(string)) {
	children := 0
	for k, v := range set {
		if k == "." {
			continue
		}
		children++
		var p string
		switch {
		case strings.HasPrefix(k, "f:"):
			p = strings.TrimPrefix(prefix+"."+k[2:], ".")
		case strings.HasPrefix(k, "k:"):
			var key map[string]any
			if err := json.Unmarshal([]byte(k[2:]), &key); err != nil {
				p = prefix + "[" + k[2:] + "]"
				break
			}
			var parts []string
			for kk, vv := range key {
				parts = append(parts, fmt.Sprintf("%s=%v", kk, vv))
			}
			sort.Strings(parts)
			p = prefix + "[" + strings.Join(parts, ",") + "]"
		case strings.HasPrefix(k, "v:"):
			p = prefix + "[=" + k[2:] + "]"
		default:
			p = prefix + "[" + k + "]"
		}
		sub, _ := v.(map[string]any)
		leaves(p, sub, add)
	}
	if children == 0 && prefix != "" {
		add(prefix)
	}
}

// statusWriters maps each status leaf of obj's managedFields to its writers.
func statusWriters(t *testing.T, mf []metav1.ManagedFieldsEntry) map[string][]writer {
	t.Helper()
	out := map[string][]writer{}
	for _, e := range mf {
		if e.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &set); err != nil {
			t.Fatalf("managedFields of %s: %v", e.Manager, err)
		}
		status, ok := set["f:status"].(map[string]any)
		if !ok {
			continue
		}
		w := writer{e.Manager, e.Operation}
		leaves("status", status, func(leaf string) {
			if !slices.Contains(out[leaf], w) {
				out[leaf] = append(out[leaf], w)
			}
		})
	}
	return out
}

// checkOwnership fails t for every status leaf in mf that is not written by exactly one
// manager, with an apply, the one docs/architecture.md's table names; it returns the rows
// seen written.
func checkOwnership(t *testing.T, kind, name string, mf []metav1.ManagedFieldsEntry, table owners) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for leaf, ws := range statusWriters(t, mf) {
		row, want, ok := table.ownerOf(leaf)
		switch {
		case !ok:
			t.Errorf("%s %s: %s is written by %v, and docs/architecture.md's table names no owner for it", kind, name, leaf, ws)
		case len(ws) != 1:
			t.Errorf("%s %s: %s has %d writers %v; the table names %s alone", kind, name, leaf, len(ws), ws, want)
		case ws[0].operation != metav1.ManagedFieldsOperationApply:
			t.Errorf("%s %s: %s is written by %v, an update rather than a server-side apply", kind, name, leaf, ws[0])
		case ws[0].manager != want:
			t.Errorf("%s %s: %s is written by %v; docs/architecture.md's table (row %s) names %s", kind, name, leaf, ws[0], row, want)
		}
		seen[row] = true
	}
	return seen
}

// A fleet is driven through acceptance, a fault that a reset clears (remediation holds,
// captures, resets, accepts and releases), and a fault that ends in Maintenance and a
// person's release; then every status field of every GPUNode and of the pool's policy
// must have one writer, a server-side apply by the field manager docs/architecture.md
// names.
func TestEveryStatusFieldHasTheOneWriterTheArchitectureNames(t *testing.T) {
	gpuNodes, policies := readOwnership(t, "GPUNode"), readOwnership(t, "GPUNodePolicy")
	f := newRemFleet(t, "own", 3, v1alpha1.RemediationPolicy{Steps: []v1alpha1.StepPolicy{
		{Step: v1alpha1.StepRebootNode, Disabled: true}}})
	f.startControllers()
	f.inService(time.Minute)

	reset, serviced := f.nodes[0], f.nodes[1]
	reset.inject(t, 3, 95)    // a reset clears it
	serviced.inject(t, 4, 79) // needs a reboot, which the pool does not allow: Maintenance
	f.eventually(time.Minute, "the node with XID 79 in Maintenance", func() error {
		if gn := f.gpuNode(serviced.name); gn == nil || gn.Status.Phase != v1alpha1.PhaseMaintenance {
			return fmt.Errorf("not yet: %s", f.describe(serviced.name))
		}
		return nil
	})
	seen := map[string]bool{}
	check := func() { // mid-run, while nodes are held, and at the end
		for _, n := range f.nodes {
			gn := f.gpuNode(n.name)
			for row := range checkOwnership(t, "GPUNode", gn.Name, gn.ManagedFields, gpuNodes) {
				seen[row] = true
			}
		}
	}
	check()
	if err := serviced.backend.Reboot(); err != nil { // the person's power cycle
		t.Fatal(err)
	}
	f.release(serviced.name)
	f.eventually(2*time.Minute, "both faulty nodes back in service", func() error {
		for _, n := range []*remNode{reset, serviced} {
			if err := f.nodeInService(n.name); err != nil {
				return err
			}
		}
		if gn := f.gpuNode(reset.name); gn.Status.Remediation == nil || len(gn.Status.Remediation.History) == 0 {
			return fmt.Errorf("node %s shows no finished step: %s", reset.name, f.describe(reset.name))
		}
		return nil
	})

	check()
	pol := &v1alpha1.GPUNodePolicy{}
	if err := f.c.Get(t.Context(), client.ObjectKey{Name: f.pool}, pol); err != nil {
		t.Fatal(err)
	}
	checkOwnership(t, "GPUNodePolicy", pol.Name, pol.ManagedFields, policies)

	// The run must have written the fields the test is about, or it proves nothing.
	for _, row := range []string{"status.phase", "status.holds", "status.remediation", "status.agent", "status.gpuHealth",
		"status.conditions[type=" + v1alpha1.ConditionAccepted + "]", "status.conditions[type=" + v1alpha1.ConditionGPUHealthy + "]",
		"status.conditions[type=" + v1alpha1.ConditionInService + "]"} {
		if !seen[row] {
			t.Errorf("no GPUNode's managedFields show %s: the run did not exercise it", row)
		}
	}
	var rows []string
	for r := range seen {
		rows = append(rows, r)
	}
	sort.Strings(rows)
	t.Logf("%d GPUNodes: %d rows of the ownership table written: %s", len(f.nodes), len(rows), strings.Join(rows, ", "))
}
