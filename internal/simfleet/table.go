package simfleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// Row is one node of the fleet table, as the API server shows it.
type Row struct {
	Node  string `json:"node"`
	Class string `json:"class"`
	// GPUs is how many GPUs the inventory lists; Healthy how many of them are healthy.
	GPUs    int    `json:"gpus"`
	Healthy int    `json:"healthy"`
	Phase   string `json:"phase"`
	Health  string `json:"health"`
	// Holds are the owners holding the Node, oldest first.
	Holds []string `json:"holds,omitempty"`
	// Remediation is the step in flight, else why remediation waits, else its last step.
	Remediation string `json:"remediation,omitempty"`
}

// Snapshot reads the fleet table: one row per Node, with its GPUNode's status.
func Snapshot(ctx context.Context, c client.Client) ([]Row, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing the fleet's Nodes: %w", err)
	}
	var gns v1alpha1.GPUNodeList
	if err := c.List(ctx, &gns); err != nil {
		return nil, fmt.Errorf("listing the fleet's GPUNodes: %w", err)
	}
	byNode := map[string]*v1alpha1.GPUNode{}
	for i := range gns.Items {
		byNode[gns.Items[i].Spec.NodeName] = &gns.Items[i]
	}
	rows := make([]Row, 0, len(nodes.Items))
	for i := range nodes.Items {
		nd := &nodes.Items[i]
		r := Row{Node: nd.Name}
		holds, err := nodeops.ParseHolds(nd.Name, nd.Annotations[v1alpha1.AnnotationHolds])
		if err != nil {
			r.Holds = []string{"(malformed)"}
		}
		for _, h := range holds {
			r.Holds = append(r.Holds, h.Owner)
		}
		if gn := byNode[nd.Name]; gn != nil {
			fillFromGPUNode(&r, gn)
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b Row) int { return strings.Compare(a.Node, b.Node) })
	return rows, nil
}

func fillFromGPUNode(r *Row, gn *v1alpha1.GPUNode) {
	st := gn.Status
	r.Class, r.GPUs, r.Phase, r.Health = st.AcceleratorClass, int(st.GPUCount), string(st.Phase), string(st.Health)
	for _, g := range st.GPUHealth {
		if g.Health == v1alpha1.HealthHealthy {
			r.Healthy++
		}
	}
	rem := st.Remediation
	switch {
	case rem == nil:
	case rem.Current != nil:
		r.Remediation = fmt.Sprintf("%s (request %d)", rem.Current.Step, rem.Current.RequestID)
	case rem.Waiting != "":
		reason, _, _ := strings.Cut(rem.Waiting, ":")
		r.Remediation = reason
	case len(rem.History) > 0:
		last := rem.History[len(rem.History)-1]
		r.Remediation = fmt.Sprintf("last: %s %s", last.Step, orDash(string(last.Outcome)))
	}
}

// Render writes rows as an aligned table with a header line.
func Render(rows []Row) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "NODE\tCLASS\tOK/GPUS\tPHASE\tHEALTH\tHOLDS\tREMEDIATION")
	for _, r := range rows {
		gpus := "-"
		if r.GPUs > 0 {
			gpus = fmt.Sprintf("%d/%d", r.Healthy, r.GPUs)
		}
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Node, orDash(r.Class), gpus, orDash(r.Phase),
			orDash(r.Health), orDash(strings.Join(r.Holds, ",")), orDash(r.Remediation))
	}
	_ = w.Flush()
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
