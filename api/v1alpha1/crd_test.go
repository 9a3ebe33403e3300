package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/internal/testenv"
)

func TestTheInstalledCRDsHaveTheirScopeShortNamesStatusAndPrintColumns(t *testing.T) {
	_, c := testenv.Start(t)
	tests := []struct {
		name      string
		crd       string
		shortName string
		status    bool
		columns   []string
	}{
		{"GPUNode shows the fleet at a glance", "gpunodes.gpunode.dev", "gn", true,
			[]string{"Node", "Class", "GPUs", "Driver", "Phase", "Health", "Accepted", "Heartbeat", "Age"}},
		{"GPUNodePolicy shows its priority and nodes", "gpunodepolicies.gpunode.dev", "gnp", true,
			[]string{"Priority", "Nodes", "Age"}},
		{"AcceptanceRecord shows node, result and counts and has no status", "acceptancerecords.gpunode.dev", "ar", false,
			[]string{"Node", "Result", "Pass", "Warn", "Fail", "Policy", "Age"}},
		{"StackPool shows its nodes, ready nodes and the versions wanted and running", "stackpools.gpunode.dev", "sp", true,
			[]string{"Nodes", "Ready", "Driver", "Running-Driver", "Toolkit", "Running-Toolkit", "Agent", "Running-Agent", "Age"}},
		{"PerformanceBaseline shows its model, driver, nodes and when it was computed", "performancebaselines.gpunode.dev", "pb", true,
			[]string{"Model", "Driver", "Nodes", "Computed"}},
		{"StackUpgrade shows its pool, phase, progress and wave", "stackupgrades.gpunode.dev", "su", true,
			[]string{"Pool", "Phase", "Upgraded", "Wave", "Driver", "Toolkit", "Failed", "Age"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(t.Context(), client.ObjectKey{Name: tt.crd}, &crd); err != nil {
				t.Fatalf("reading CRD %s back: %v", tt.crd, err)
			}
			if crd.Spec.Scope != apiextensionsv1.ClusterScoped {
				t.Errorf("scope = %s, want Cluster", crd.Spec.Scope)
			}
			if !slices.Contains(crd.Spec.Names.ShortNames, tt.shortName) {
				t.Errorf("short names = %v, want %s among them", crd.Spec.Names.ShortNames, tt.shortName)
			}
			if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1alpha1" {
				t.Fatalf("versions = %+v, want v1alpha1 alone", crd.Spec.Versions)
			}
			v := crd.Spec.Versions[0]
			hasStatus := v.Subresources != nil && v.Subresources.Status != nil
			if hasStatus != tt.status {
				t.Errorf("status subresource = %v, want %v", hasStatus, tt.status)
			}
			var got []string
			for _, col := range v.AdditionalPrinterColumns {
				got = append(got, col.Name)
			}
			if !slices.Equal(got, tt.columns) {
				t.Errorf("print columns = %v, want %v", got, tt.columns)
			}
		})
	}
}

func TestTheAPIServerPrintsAGPUNodeWithNodeClassGPUsDriverPhaseHealthAcceptedAndHeartbeat(t *testing.T) {
	cfg, c := testenv.Start(t)
	n := gpuNode("node-table")
	if err := c.Create(t.Context(), n); err != nil {
		t.Fatalf("creating GPUNode: %v", err)
	}
	n.Status = gpuNodeStatus()
	if err := c.Status().Update(t.Context(), n); err != nil {
		t.Fatalf("updating status: %v", err)
	}
	table := getTable(t, cfg, "/apis/gpunode.dev/v1alpha1/gpunodes/node-table")
	if len(table.Rows) != 1 {
		t.Fatalf("table rows = %d, want 1", len(table.Rows))
	}
	got := map[string]string{}
	for i, col := range table.ColumnDefinitions {
		got[col.Name] = fmt.Sprint(table.Rows[0].Cells[i])
	}
	want := map[string]string{
		"Name": "node-table", "Node": "node-table", "Class": "h100-sxm-80gb", "GPUs": "1",
		"Driver": "580.95.05", "Phase": "Accepting", "Health": "healthy", "Accepted": "passed",
	}
	for col, w := range want {
		if got[col] != w {
			t.Errorf("column %s = %q, want %q (row %v)", col, got[col], w, got)
		}
	}
	if h := got["Heartbeat"]; h == "" || h == "<nil>" { // an age, relative to the server's clock
		t.Errorf("column Heartbeat = %q, want the age of the agent's heartbeat (row %v)", h, got)
	}
}

// getTable asks the API server for its table view of path, as kubectl get does.
func getTable(t *testing.T, cfg *rest.Config, path string) metav1.Table {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	body, err := cs.Discovery().RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("GET %s as a table: %v", path, err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatalf("decoding table from %s: %v", path, err)
	}
	return table
}
