package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	ctrlremediation "github.com/gpunode/gpunode/internal/controller/remediation"
	"github.com/gpunode/gpunode/internal/remediation"
	"github.com/gpunode/gpunode/internal/testenv"
)

// futureStamp is a request stamp far ahead of every clock.
const futureStamp = "2099-01-01T00:00:00Z"

// reconcileNode runs the remediation controller's reconcile for GPUNode name until it
// settles (a placed hold asks for an immediate second pass).
func reconcileNode(t *testing.T, r *ctrlremediation.Reconciler, name string) {
	t.Helper()
	for range 5 {
		res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKey{Name: name}})
		if err != nil {
			t.Fatalf("reconcile %s: %v", name, err)
		}
		if res.RequeueAfter != ctrlremediation.AfterHoldPlaced {
			return
		}
	}
}

func nodeState(t *testing.T, c client.Client, name string) remediation.State {
	t.Helper()
	var gn v1alpha1.GPUNode
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &gn); err != nil {
		t.Fatal(err)
	}
	s, err := ctrlremediation.ReadState(&gn)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAReleaseAfterOneStampedInTheFutureReleasesTheNode(t *testing.T) {
	cfg, c := testenv.Start(t)
	kc := kubeconfigFor(t, cfg)
	gn := joinNode(t, c, "release-after-future", "release-after-future", true)
	putInMaintenance(t, c, gn, time.Now().Add(-time.Minute))
	patch := client.MergeFrom(gn.DeepCopy())
	gn.Annotations[v1alpha1.AnnotationRelease] = futureStamp
	if err := c.Patch(t.Context(), gn, patch); err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(100)
	r := &ctrlremediation.Reconciler{Client: c, Recorder: rec, Clock: clock.RealClock{}}
	reconcileNode(t, r, gn.Name)
	if s := nodeState(t, c, gn.Name); s.Phase != remediation.PhaseMaintenance || !s.ReleaseHandled.IsZero() {
		t.Fatalf("after a release stamped %s: phase %s, release handled %s; want Maintenance and none handled", futureStamp, s.Phase, s.ReleaseHandled)
	}
	if !sawRefusal(rec, futureStamp) {
		t.Error("no RequestRefused Event named the future release")
	}

	execute(t, "release", gn.Name, "--kubeconfig", kc).check(t, ExitOK, []string{"release requested at"}, nil)
	reconcileNode(t, r, gn.Name)
	v, at := releaseAnnotation(t, c, gn.Name)
	if s := nodeState(t, c, gn.Name); s.Phase != remediation.PhaseAccepting || !s.AfterRelease || !s.ReleaseHandled.Equal(at) {
		t.Fatalf("after gpunode release (%s): phase %s, after release %v, handled %s; want Accepting after the release, handled", v, s.Phase, s.AfterRelease, s.ReleaseHandled)
	}
}

func sawRefusal(rec *events.FakeRecorder, value string) bool {
	for {
		select {
		case e := <-rec.Events:
			if strings.Contains(e, v1alpha1.ReasonRequestRefused) && strings.Contains(e, value) {
				return true
			}
		default:
			return false
		}
	}
}

func TestReleaseRefusesAClockTheControllerWouldNotAccept(t *testing.T) {
	cfg, c := testenv.Start(t)
	kc := kubeconfigFor(t, cfg)
	since := time.Now().Add(-time.Minute)
	putInMaintenance(t, c, joinNode(t, c, "release-skew", "release-skew", true), since)
	cases := []struct {
		name    string
		now     time.Time
		says    string
		written bool
	}{
		{"a clock behind the Maintenance is refused before the write", since.Add(-time.Minute), "not before this machine's clock", false},
		{"a clock ten minutes ahead of the API server's is reported and its stamp withdrawn", time.Now().Add(10 * time.Minute), "ahead of the API server's clock", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := runRelease(t.Context(), &releaseOptions{cluster: clusterFlags{kubeconfig: kc}, now: func() time.Time { return tc.now }}, "release-skew", &out)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != ExitFail || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v, want exit 1 saying %q", err, tc.says)
			}
			if strings.Contains(out.String(), "release requested") {
				t.Errorf("reported success:\n%s", out.String())
			}
			if v, _ := releaseAnnotation(t, c, "release-skew"); (v != "") != tc.written {
				t.Errorf("release annotation %q, want written=%v", v, tc.written)
			}
		})
	}
}

func TestAResumeStampedInTheFutureDoesNotStopAPersonResumingATrippedPool(t *testing.T) {
	cfg, c := testenv.Start(t)
	p := &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: "resume-after-future",
		Annotations: map[string]string{v1alpha1.AnnotationResumeRemediation: futureStamp}}}
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	p.Status.Breaker = &v1alpha1.BreakerStatus{TrippedAt: metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second)), Faulting: 10, Nodes: 10, Reason: "10 of 10 nodes"}
	if err := c.Status().Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	execute(t, "resume", p.Name, "--kubeconfig", kubeconfigFor(t, cfg)).check(t, ExitOK,
		[]string{"GPUNodePolicy resume-after-future: remediation resumed at", "(10 of 10 nodes faulting)"}, nil)
	if err := c.Get(t.Context(), client.ObjectKey{Name: p.Name}, p); err != nil {
		t.Fatal(err)
	}
	if v := p.Annotations[v1alpha1.AnnotationResumeRemediation]; v == futureStamp {
		t.Fatalf("the resume annotation is still %s", v)
	}
}

func TestResumeRefusesAClockTheControllerWouldNotAccept(t *testing.T) {
	cfg, c := testenv.Start(t)
	kc := kubeconfigFor(t, cfg)
	p := &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: "resume-skew"}}
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	trippedAt := time.Now().Add(-time.Minute).Truncate(time.Second)
	p.Status.Breaker = &v1alpha1.BreakerStatus{TrippedAt: metav1.NewTime(trippedAt), Faulting: 4, Nodes: 10, Reason: "4 of 10 nodes"}
	if err := c.Status().Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		now  time.Time
		says string
	}{
		{"a clock behind the trip is refused before the write", trippedAt.Add(-time.Minute), "not before this machine's clock"},
		{"a clock ten minutes ahead of the API server's is reported and its stamp withdrawn", time.Now().Add(10 * time.Minute), "so it was withdrawn"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := runResume(t.Context(), &resumeOptions{cluster: clusterFlags{kubeconfig: kc}, now: func() time.Time { return tc.now }}, p.Name, &out)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != ExitFail || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v, want exit 1 saying %q", err, tc.says)
			}
			if strings.Contains(out.String(), "remediation resumed") {
				t.Errorf("reported success:\n%s", out.String())
			}
			var got v1alpha1.GPUNodePolicy
			if err := c.Get(t.Context(), client.ObjectKey{Name: p.Name}, &got); err != nil {
				t.Fatal(err)
			}
			if v, ok := got.Annotations[v1alpha1.AnnotationResumeRemediation]; ok {
				t.Errorf("resume annotation %q left in place", v)
			}
		})
	}
}
