package scale

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// footprint is the Go heap that holding every object of each kind the controller caches
// takes, decoded as the controller's informers decode them: where its memory goes.
func footprint(t *testing.T, c client.Client) string {
	t.Helper()
	nodeMeta := &metav1.PartialObjectMetadataList{}
	nodeMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	var out []string
	for _, l := range []struct {
		name string
		list client.ObjectList
	}{
		{"gpunodes", &v1alpha1.GPUNodeList{}},
		{"acceptancerecords", &v1alpha1.AcceptanceRecordList{}},
		{"node_metadata", nodeMeta},
	} {
		before := heapAlloc()
		if err := c.List(t.Context(), l.list); err != nil {
			t.Fatalf("listing %s: %v", l.name, err)
		}
		after := heapAlloc()
		out = append(out, fmt.Sprintf("%s_heap_mib=%.1f", l.name, float64(after-before)/(1<<20)))
		runtime.KeepAlive(l.list)
	}
	return strings.Join(out, " ")
}

func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
