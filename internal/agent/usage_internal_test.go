package agent

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/podresources"
)

func TestPodKeys(t *testing.T) {
	many := make([]podresources.Pod, 40)
	for i := range many {
		many[i] = podresources.Pod{Namespace: "ns", Name: fmt.Sprintf("p%02d", i), Container: "c"}
	}
	long := podresources.Pod{Namespace: strings.Repeat("n", 63), Name: strings.Repeat("x", 400), Container: "c"}
	tests := []struct {
		name       string
		in         []podresources.Pod
		wantLen    int
		wantFirst  string
		wantLast   string
		wantMaxLen int
	}{
		{"no containers give no pods", nil, 0, "", "", 0},
		{"two containers of one pod give the pod once",
			[]podresources.Pod{{Namespace: "ml", Name: "a", Container: "c1"}, {Namespace: "ml", Name: "a", Container: "c2"}, {Namespace: "ml", Name: "b", Container: "c1"}},
			2, "ml/a", "ml/b", 4},
		{"forty pods are cut to the API's 32, in order", many, 32, "ns/p00", "ns/p31", 6},
		{"a name longer than the API allows is cut to 317 bytes", []podresources.Pod{long}, 1, "", "", 317},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := podKeys(tt.in)
			if len(got) != tt.wantLen {
				t.Fatalf("podKeys = %v (%d), want %d entries", got, len(got), tt.wantLen)
			}
			if tt.wantFirst != "" && (got[0] != tt.wantFirst || got[len(got)-1] != tt.wantLast) {
				t.Errorf("podKeys = %v, want %s ... %s", got, tt.wantFirst, tt.wantLast)
			}
			for _, k := range got {
				if len(k) > tt.wantMaxLen {
					t.Errorf("key %q is %d bytes, more than %d", k, len(k), tt.wantMaxLen)
				}
			}
		})
	}
}

func TestPodsKnown(t *testing.T) {
	now := time.Now()
	failed := errors.New("connection refused")
	tests := []struct {
		name string
		in   podresources.Stats
		want bool
	}{
		{"a source never read is not known", podresources.Stats{}, false},
		{"a source that never answered is not known", podresources.Stats{LastAttempt: now, Err: failed, Failures: 3}, false},
		{"a source whose last refresh succeeded is known", podresources.Stats{LastAttempt: now, LastSuccess: now}, true},
		{"a failing source that keeps its last map is known", podresources.Stats{LastAttempt: now, LastSuccess: now.Add(-time.Second), Err: failed, Stale: true}, true},
		{"a failing source whose map was dropped is not known", podresources.Stats{LastAttempt: now, LastSuccess: now.Add(-time.Hour), Err: failed}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podsKnown(tt.in); got != tt.want {
				t.Errorf("podsKnown(%+v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParentGPU(t *testing.T) {
	a := &Agent{}
	a.parents.update([]gpu.Device{
		{Index: 0, UUID: "GPU-a", MIGDevices: []gpu.MIGDevice{{Index: 0, UUID: "MIG-a0"}, {Index: 1, UUID: "MIG-a1"}}},
		{Index: 1, UUID: "GPU-b"},
	})
	tests := []struct {
		name, id, want string
		ok             bool
	}{
		{"a MIG device belongs to its GPU", "MIG-a1", "GPU-a", true},
		{"an index names its GPU", "1", "GPU-b", true},
		{"a GPU's own UUID has no parent", "GPU-a", "", false},
		{"an ID not in the snapshot is unknown", "MIG-zz", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := a.ParentGPU(tt.id)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParentGPU(%q) = %q, %v; want %q, %v", tt.id, got, ok, tt.want, tt.ok)
			}
		})
	}
	a.parents.update(nil) // MIG turned off: the old devices are forgotten
	if got, ok := a.ParentGPU("MIG-a0"); ok {
		t.Errorf("after an update without MIG devices ParentGPU(MIG-a0) = %q, want unknown", got)
	}
}
