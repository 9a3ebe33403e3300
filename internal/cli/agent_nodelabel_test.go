package cli

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpunode/gpunode/internal/deviceplugin"
	"github.com/gpunode/gpunode/internal/labels"
)

// A bad label from the cluster must not stop the agent (a crash loop leaves the node
// unmonitored and unheld): it is reported, and the file's configuration is served.
func TestABadReplicasLabelIsReportedAndTheFilesReplicasServed(t *testing.T) {
	cases := []struct {
		name      string
		label     string
		replicas  int
		wantEvent bool
	}{
		{"a number of replicas in range overrides the file's", "8", 8, false},
		{"a word is refused and the file's replicas are served", "many", 4, true},
		{"zero replicas are refused and the file's replicas are served", "0", 4, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{labels.KeyReplicasOverride: tc.label}}}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(node).Build()
			cfg := writeFile(t, t.TempDir(), "dp.yaml", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n")
			var logs bytes.Buffer
			o := &pluginOptions{config: cfg}
			s, err := o.sharing(context.Background(), c, "n1", slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatalf("the agent stops on a node label: %v", err)
			}
			if got := replicasOf(s); got != tc.replicas {
				t.Errorf("nvidia.com/gpu replicas = %d, want %d", got, tc.replicas)
			}
			var evs eventsv1.EventList
			if err := c.List(context.Background(), &evs, client.InNamespace(metav1.NamespaceDefault)); err != nil {
				t.Fatal(err)
			}
			if !tc.wantEvent {
				if len(evs.Items) != 0 {
					t.Errorf("Events for a good label: %+v", evs.Items)
				}
				return
			}
			if len(evs.Items) != 1 {
				t.Fatalf("want one Event, got %d", len(evs.Items))
			}
			ev := evs.Items[0]
			if ev.Reason != "BadNodeLabel" || ev.Type != corev1.EventTypeWarning || ev.Regarding.Kind != "Node" || ev.Regarding.Name != "n1" ||
				!strings.Contains(ev.Note, labels.KeyReplicasOverride) || !strings.Contains(ev.Note, tc.label) {
				t.Errorf("the Event does not name the node, the label and its value: %+v", ev)
			}
			if !strings.Contains(logs.String(), labels.KeyReplicasOverride) {
				t.Errorf("the log does not name the label:\n%s", logs.String())
			}
		})
	}
}

func replicasOf(s deviceplugin.Sharing) int {
	for _, r := range s.TimeSlicing.Resources {
		if r.Name == deviceplugin.ResourceName {
			return r.Replicas
		}
	}
	return 0
}
