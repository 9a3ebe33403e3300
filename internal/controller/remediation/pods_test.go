package remediation

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pod creates a running pod on node in the default namespace with the given labels.
func (h *harness) pod(name string, labels map[string]string, ready bool) *corev1.Pod {
	h.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec:       corev1.PodSpec{NodeName: h.name, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
	}
	if err := h.c.Create(h.t.Context(), p); err != nil {
		h.t.Fatalf("creating pod %s: %v", name, err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if err := h.c.Status().Update(h.t.Context(), p); err != nil {
		h.t.Fatalf("marking pod %s running: %v", name, err)
	}
	return p
}

// gone reports whether the pod was deleted or evicted (it is absent or terminating).
func (h *harness) gone(name string) bool {
	h.t.Helper()
	p := &corev1.Pod{}
	err := h.c.Get(h.t.Context(), client.ObjectKey{Namespace: "default", Name: name}, p)
	return client.IgnoreNotFound(err) == nil && (err != nil || p.DeletionTimestamp != nil)
}
