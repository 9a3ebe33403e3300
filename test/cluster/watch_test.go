package cluster_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// taintWatch follows one node's taint keys through `kubectl get node -w` and keeps every
// version it saw, so that a hold that comes and goes between two polls is still seen.
type taintWatch struct {
	mu   sync.Mutex
	seen [][]string
	at   []time.Time // when each version arrived
	stop context.CancelFunc
	done chan struct{}
}

func watchTaints(t *testing.T, node string) *taintWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &taintWatch{stop: cancel, done: make(chan struct{})}
	// -o json: one object per version (a jsonpath template ends the watch on a node
	// without taints).
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot, "hack/cluster-exec.sh"), "kubectl", "get", "node", node,
		"--watch", "-o", "json")
	cmd.Env = append(os.Environ(), "CLUSTER_STATE="+env.state)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		dec := json.NewDecoder(out)
		for {
			var n corev1.Node
			if err := dec.Decode(&n); err != nil {
				break
			}
			var keys []string
			for _, x := range n.Spec.Taints {
				keys = append(keys, x.Key)
			}
			w.mu.Lock()
			w.seen, w.at = append(w.seen, keys), append(w.at, time.Now())
			w.mu.Unlock()
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(w.close)
	return w
}

func (w *taintWatch) close() { w.stop(); <-w.done }

// versions is how many versions of the node the watch has seen.
func (w *taintWatch) versions() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
}

// firstWith is when the first version with taint key arrived (zero: none yet).
func (w *taintWatch) firstWith(key string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, keys := range w.seen {
		if slices.Contains(keys, key) {
			return w.at[i]
		}
	}
	return time.Time{}
}

// heldThenFree says whether some version had taint key and a later one had no gpunode taint.
func (w *taintWatch) heldThenFree(key string) (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	held := -1
	for i, keys := range w.seen {
		if held < 0 && slices.Contains(keys, key) {
			held = i
		}
		if held >= 0 && i > held && !hasGPUNodeTaint(keys) {
			return true, ""
		}
	}
	if held < 0 {
		return false, "the node never carried " + key + " (versions seen: " + strings.Join(flat(w.seen), "; ") + ")"
	}
	return false, "held, not released yet (versions seen: " + strings.Join(flat(w.seen), "; ") + ")"
}

func hasGPUNodeTaint(keys []string) bool {
	for _, k := range keys {
		if k == v1alpha1.TaintNotAccepted || k == v1alpha1.TaintUnschedulable {
			return true
		}
	}
	return false
}

func flat(seen [][]string) []string {
	out := make([]string, len(seen))
	for i, keys := range seen {
		out[i] = "[" + strings.Join(keys, " ") + "]"
	}
	return out
}

// nodeGPUs is the node's allocatable nvidia.com/gpu as the kubelet reports it.
func nodeGPUs(ctx context.Context) (string, error) {
	var n corev1.Node
	if err := getJSON(ctx, &n, "node", nodeName); err != nil {
		return "", err
	}
	q, ok := n.Status.Allocatable["nvidia.com/gpu"]
	if !ok {
		return "none", nil
	}
	return q.String(), nil
}
