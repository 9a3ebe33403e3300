package holdmetrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func node(name, holds string) metav1.PartialObjectMetadata {
	n := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if holds != "" {
		n.Annotations = map[string]string{v1alpha1.AnnotationHolds: holds}
	}
	return n
}

func TestHolds(t *testing.T) {
	cases := []struct {
		name      string
		nodes     []metav1.PartialObjectMetadata
		want      []Series
		malformed int
	}{
		{"a node without holds has no series", []metav1.PartialObjectMetadata{node("a", "")}, nil, 0},
		{"each hold of a node is one series aged from its since", []metav1.PartialObjectMetadata{
			node("a", `[{"owner":"remediation","reason":"fault","since":"2026-12-02T06:00:00Z"},{"owner":"acceptance","reason":"not-accepted","since":"2026-12-02T11:59:00Z"}]`),
		}, []Series{{"a", "acceptance", "not-accepted", 60}, {"a", "remediation", "fault", 6 * 3600}}, 0},
		{"a hold stamped in the future counts zero seconds", []metav1.PartialObjectMetadata{
			node("a", `[{"owner":"operator","reason":"rack","since":"2026-12-02T13:00:00Z"}]`),
		}, []Series{{"a", "operator", "rack", 0}}, 0},
		{"a malformed annotation is counted, not served, and the other nodes still are", []metav1.PartialObjectMetadata{
			node("a", `not json`), node("b", `[{"owner":"upgrade","reason":"wave-2","since":"2026-12-02T11:00:00Z"}]`),
		}, []Series{{"b", "upgrade", "wave-2", 3600}}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, bad := Holds(c.nodes, now)
			if len(got) != len(c.want) || bad != c.malformed {
				t.Fatalf("got %v (%d malformed), want %v (%d)", got, bad, c.want, c.malformed)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("series %d: %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

type listReader struct {
	client.Reader
	nodes []metav1.PartialObjectMetadata
	err   error
}

func (r listReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	if r.err != nil {
		return r.err
	}
	list.(*metav1.PartialObjectMetadataList).Items = r.nodes
	return nil
}

func TestTheCollectorServesTheHoldsAndReportsItsOwnSuccess(t *testing.T) {
	c := &Collector{Reader: listReader{nodes: []metav1.PartialObjectMetadata{
		node("gpu-1", `[{"owner":"remediation","reason":"fault","since":"2026-12-02T11:00:00Z"}]`),
	}}, Clock: func() time.Time { return now }}
	want := `
# HELP gpunode_controller_holds_collector_success 1 when this scrape read the Nodes' holds, 0 when it could not (the hold series are then absent, not zero).
# TYPE gpunode_controller_holds_collector_success gauge
gpunode_controller_holds_collector_success 1
# HELP gpunode_node_hold_seconds Seconds since each hold on a node was taken (the node is out of service while any hold stands), by owner and reason.
# TYPE gpunode_node_hold_seconds gauge
gpunode_node_hold_seconds{node="gpu-1",owner="remediation",reason="fault"} 3600
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "gpunode_node_hold_seconds", "gpunode_controller_holds_collector_success"); err != nil {
		t.Error(err)
	}
	failing := &Collector{Reader: listReader{err: errors.New("cache not synced")}}
	if err := testutil.CollectAndCompare(failing, strings.NewReader(`
# HELP gpunode_controller_holds_collector_success 1 when this scrape read the Nodes' holds, 0 when it could not (the hold series are then absent, not zero).
# TYPE gpunode_controller_holds_collector_success gauge
gpunode_controller_holds_collector_success 0
`)); err != nil {
		t.Error(err)
	}
	follower := &Collector{Reader: c.Reader, Leading: func() bool { return false }}
	if n := testutil.CollectAndCount(follower); n != 0 {
		t.Errorf("a replica that does not lead served %d series, want none", n)
	}
}
