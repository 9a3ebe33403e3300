// Package holdmetrics serves the controller's view of the fleet's holds as Prometheus
// metrics: gpunode_node_hold_seconds{node, owner, reason}, computed on each scrape from the
// holds annotation of the cached Nodes, so that an alert sees a node kept out of service
// too long whoever holds it.
package holdmetrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// listTimeout bounds one scrape's read of the cache.
const listTimeout = 10 * time.Second

var (
	holdSeconds = prometheus.NewDesc("gpunode_node_hold_seconds",
		"Seconds since each hold on a node was taken (the node is out of service while any hold stands), by owner and reason.",
		[]string{"node", "owner", "reason"}, nil)
	malformed = prometheus.NewDesc("gpunode_node_holds_malformed",
		"Nodes whose gpunode.dev/holds annotation cannot be read (nothing is written to them until a person repairs it).",
		nil, nil)
	success = prometheus.NewDesc("gpunode_controller_holds_collector_success",
		"1 when this scrape read the Nodes' holds, 0 when it could not (the hold series are then absent, not zero).",
		nil, nil)
)

// Collector computes the hold metrics on scrape.
type Collector struct {
	// Reader lists Nodes' metadata, from the manager's cache (the holds are an annotation).
	Reader client.Reader
	// Leading reports whether this replica leads: only the leader serves the series, so that
	// two controller replicas do not raise every alert twice. nil: always.
	Leading func() bool
	// Clock gives "now"; nil means time.Now.
	Clock func() time.Time
}

// Describe sends the metrics' descriptions.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- holdSeconds
	ch <- malformed
	ch <- success
}

// Collect lists the Nodes and sends one series per hold.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.Leading != nil && !c.Leading() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := c.Reader.List(ctx, nodes); err != nil {
		ch <- prometheus.MustNewConstMetric(success, prometheus.GaugeValue, 0)
		return
	}
	now := time.Now()
	if c.Clock != nil {
		now = c.Clock()
	}
	series, bad := Holds(nodes.Items, now)
	for _, s := range series {
		ch <- prometheus.MustNewConstMetric(holdSeconds, prometheus.GaugeValue, s.Seconds, s.Node, s.Owner, s.Reason)
	}
	ch <- prometheus.MustNewConstMetric(malformed, prometheus.GaugeValue, float64(bad))
	ch <- prometheus.MustNewConstMetric(success, prometheus.GaugeValue, 1)
}

// Series is one hold's sample.
type Series struct {
	Node, Owner, Reason string
	Seconds             float64
}

// Holds are the samples of the nodes' holds at now, and the number of nodes whose holds
// annotation is malformed. A hold stamped later than now counts 0 seconds.
func Holds(nodes []metav1.PartialObjectMetadata, now time.Time) (series []Series, malformed int) {
	for _, n := range nodes {
		value, ok := n.Annotations[v1alpha1.AnnotationHolds]
		if !ok {
			continue
		}
		holds, err := nodeops.ParseHolds(n.Name, value)
		if err != nil {
			malformed++
			continue
		}
		for _, h := range holds {
			series = append(series, Series{Node: n.Name, Owner: h.Owner, Reason: h.Reason, Seconds: max(0, now.Sub(h.Since).Seconds())})
		}
	}
	return series, malformed
}
