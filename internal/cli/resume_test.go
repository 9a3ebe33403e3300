package cli

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	ctrlremediation "github.com/gpunode/gpunode/internal/controller/remediation"
	"github.com/gpunode/gpunode/internal/testenv"
)

func TestResumingATrippedPoolClosesItsBreakerForTheController(t *testing.T) {
	cfg, c := testenv.Start(t)
	kc := kubeconfigFor(t, cfg)
	tripped := &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: "resume-tripped"}}
	calm := &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: "resume-calm"}}
	for _, p := range []*v1alpha1.GPUNodePolicy{tripped, calm} {
		if err := c.Create(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	trippedAt := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	tripped.Status.Breaker = &v1alpha1.BreakerStatus{TrippedAt: metav1.NewTime(trippedAt), Faulting: 4, Nodes: 10,
		Reason: "4 of 10 nodes reported new faults within 10m0s (threshold 20%)"}
	if err := c.Status().Update(t.Context(), tripped); err != nil {
		t.Fatal(err)
	}
	resumed := func(name string) string {
		var p v1alpha1.GPUNodePolicy
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		return p.Annotations[v1alpha1.AnnotationResumeRemediation]
	}

	tests := []struct {
		name     string
		args     []string
		code     int
		inStdout []string
		inStderr []string
		policy   string
		resumed  bool
	}{
		{"a pool whose breaker is not tripped is refused", []string{"resume", "resume-calm", "--kubeconfig", kc}, ExitFail, nil,
			[]string{`the circuit breaker of pool "resume-calm" is not tripped`, "--force"}, "resume-calm", false},
		{"an unknown policy exits one naming it", []string{"resume", "no-such-pool", "--kubeconfig", kc}, ExitFail, nil,
			[]string{`no GPUNodePolicy "no-such-pool"`}, "resume-calm", false},
		{"no policy is bad usage", []string{"resume", "--kubeconfig", kc}, ExitUsage, nil, []string{"accepts 1 arg"}, "resume-calm", false},
		{"a tripped pool is resumed and the trip is shown", []string{"resume", "resume-tripped", "--kubeconfig", kc, "--reason", "PDU replaced"}, ExitOK,
			[]string{"GPUNodePolicy resume-tripped: remediation resumed at", "(4 of 10 nodes faulting)", "reason: PDU replaced", "next: the remediation controller closes the breaker"},
			nil, "resume-tripped", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			execute(t, tt.args...).check(t, tt.code, tt.inStdout, tt.inStderr)
			if v := resumed(tt.policy); (v != "") != tt.resumed {
				t.Errorf("resume annotation %q on %s, want set=%v", v, tt.policy, tt.resumed)
			}
		})
	}

	execute(t, "resume", "resume-tripped", "--kubeconfig", kc).check(t, ExitFail, nil,
		[]string{`the circuit breaker of pool "resume-tripped" is not tripped`})

	// The controller's own mapping reads the resume as later than the trip: the breaker closes.
	var p v1alpha1.GPUNodePolicy
	if err := c.Get(t.Context(), client.ObjectKey{Name: "resume-tripped"}, &p); err != nil {
		t.Fatal(err)
	}
	b := ctrlremediation.Breaker(&p)
	if !b.ResumedAt.After(b.TrippedAt) {
		t.Errorf("the controller reads resumedAt %s, trippedAt %s: want the resume after the trip (annotation %q)",
			b.ResumedAt, b.TrippedAt, p.Annotations[v1alpha1.AnnotationResumeRemediation])
	}
	if strings.TrimSpace(p.Annotations[v1alpha1.AnnotationResumeRemediation]) == "" {
		t.Error("no resume annotation")
	}
}
