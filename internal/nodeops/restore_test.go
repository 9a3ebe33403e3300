package nodeops

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

func TestRestoreHold(t *testing.T) {
	failed := Hold{Owner: v1alpha1.HoldOwnerAcceptance, Reason: "gpu-count: 7 GPUs found", Since: t0}
	cases := []struct {
		name         string
		annotated    Holds
		taints       []corev1.Taint
		hold         Hold
		wantHolds    Holds
		wantTaints   []corev1.Taint
		wantHold     bool
		wantRestored []string
	}{
		{
			name: "a hold stripped of its entry and its taints gets both back", hold: failed,
			wantHolds: Holds{failed}, wantTaints: []corev1.Taint{notAccepted, unschedulable("gpu-count-7-GPUs-found")},
			wantHold: true, wantRestored: []string{notAccepted.ToString(), "gpunode.dev/unschedulable=gpu-count-7-GPUs-found:NoSchedule"},
		},
		{
			name:      "a hold stripped of its taints only gets the taints back and keeps its entry",
			annotated: Holds{{Owner: failed.Owner, Reason: "older reason", Since: t1}}, taints: []corev1.Taint{foreign}, hold: failed,
			wantHolds:    Holds{{Owner: failed.Owner, Reason: "older reason", Since: t1}},
			wantTaints:   []corev1.Taint{foreign, notAccepted, unschedulable("older-reason")},
			wantRestored: []string{notAccepted.ToString(), "gpunode.dev/unschedulable=older-reason:NoSchedule"},
		},
		{
			name:      "a hold stripped of its entry only gets the entry back and keeps the taints",
			annotated: nil, taints: []corev1.Taint{unschedulable("xid-79")}, hold: remediateXID,
			wantHolds: Holds{remediateXID}, wantTaints: []corev1.Taint{unschedulable("xid-79")}, wantHold: true,
		},
		{
			name:   "an acceptance hold adopted from the registration taint is replaced by the owner's record",
			taints: []corev1.Taint{notAccepted}, hold: failed,
			wantHolds: Holds{failed}, wantTaints: []corev1.Taint{notAccepted, unschedulable("gpu-count-7-GPUs-found")},
			wantHold: true, wantRestored: []string{"gpunode.dev/unschedulable=gpu-count-7-GPUs-found:NoSchedule"},
		},
		{
			name:      "a node that shows the hold and its taints needs nothing",
			annotated: Holds{remediateXID}, taints: []corev1.Taint{unschedulable("xid-79")}, hold: remediateXID,
			wantHolds: Holds{remediateXID}, wantTaints: []corev1.Taint{unschedulable("xid-79")},
		},
		{
			name:      "another owner's hold and a foreign taint are kept, and the oldest hold names the taint",
			annotated: Holds{{Owner: "operator", Reason: "rack move", Since: t2}}, taints: []corev1.Taint{foreign}, hold: remediateXID,
			wantHolds:  Holds{{Owner: "operator", Reason: "rack move", Since: t2}, remediateXID},
			wantTaints: []corev1.Taint{foreign, unschedulable("xid-79")}, wantHold: true,
			wantRestored: []string{"gpunode.dev/unschedulable=xid-79:NoSchedule"},
		},
		{
			name:      "a changed unschedulable value is put back",
			annotated: Holds{remediateXID}, taints: []corev1.Taint{unschedulable("free")}, hold: remediateXID,
			wantHolds: Holds{remediateXID}, wantTaints: []corev1.Taint{unschedulable("xid-79")},
			wantRestored: []string{"gpunode.dev/unschedulable=xid-79:NoSchedule"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.annotated.Render()
			holds, taints, r := RestoreHold(tc.annotated, tc.taints, t0, tc.hold)
			if !holds.Equal(tc.wantHolds) || !TaintsEqual(taints, tc.wantTaints) {
				t.Errorf("RestoreHold = %v, %v; want %v, %v", holds, taints, tc.wantHolds, tc.wantTaints)
			}
			if (r.Hold.Owner != "") != tc.wantHold || (tc.wantHold && !r.Hold.Since.Equal(tc.hold.Since)) {
				t.Errorf("restored hold %+v, want restored %v with since %s", r.Hold, tc.wantHold, tc.hold.Since)
			}
			var got []string
			for _, tt := range r.Taints {
				got = append(got, tt.ToString())
			}
			if strings.Join(got, ",") != strings.Join(tc.wantRestored, ",") {
				t.Errorf("restored taints %v, want %v", got, tc.wantRestored)
			}
			if r.Any() != (tc.wantHold || len(tc.wantRestored) > 0) {
				t.Errorf("Any() = %v for %+v", r.Any(), r)
			}
			if tc.annotated.Render() != before {
				t.Errorf("RestoreHold modified its input")
			}
		})
	}
}

func TestRestoredSaysWhatWasPutBack(t *testing.T) {
	r := Restored{Hold: remediateXID, Taints: []corev1.Taint{unschedulable("xid-79")}}
	want := `the remediation hold ("xid 79", since 2026-11-29T17:01:00Z) in annotation gpunode.dev/holds and taint gpunode.dev/unschedulable=xid-79:NoSchedule`
	if got := r.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestHoldsChanged(t *testing.T) {
	node := func(holds string, taints ...corev1.Taint) *corev1.Node {
		n := &corev1.Node{Spec: corev1.NodeSpec{Taints: taints}}
		if holds != "" {
			n.Annotations = map[string]string{v1alpha1.AnnotationHolds: holds}
		}
		return n
	}
	held := Holds{remediateXID}.Render()
	cases := []struct {
		name     string
		old, new *corev1.Node
		want     bool
	}{
		{"a stripped holds annotation is a change", node(held, unschedulable("xid-79")), node("", unschedulable("xid-79")), true},
		{"a stripped gpunode taint is a change", node(held, unschedulable("xid-79")), node(held), true},
		{"a changed gpunode taint value is a change", node(held, unschedulable("xid-79")), node(held, unschedulable("x")), true},
		{"a foreign taint added is not a change", node(held, unschedulable("xid-79")), node(held, unschedulable("xid-79"), foreign), false},
		{"a gpunode key with another effect is not a change", node(held), node(held, foreignExec), false},
		{"a status update is not a change", node(held), func() *corev1.Node {
			n := node(held)
			n.Status.Phase = corev1.NodeRunning
			return n
		}(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := HoldsChanged(tc.old, tc.new); got != tc.want {
				t.Errorf("HoldsChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOpsRestorePutsBackAStrippedHoldAndWritesNothingWhenItIsThere(t *testing.T) {
	cfg, admin := testenv.Start(t)
	var w writes
	c := counted(t, cfg, &w, nil)
	createNode(t, admin, "restore-1", func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{foreign}
		n.Annotations = map[string]string{"example.com/keep": "yes"}
	})
	ops := Ops{Client: c}
	r, err := ops.Restore(t.Context(), "restore-1", remediateXID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Hold.Owner != v1alpha1.HoldOwnerRemediation || len(r.Taints) != 1 {
		t.Errorf("restored %+v, want the remediation entry and its taint", r)
	}
	node := &corev1.Node{}
	if err := admin.Get(t.Context(), client.ObjectKey{Name: "restore-1"}, node); err != nil {
		t.Fatal(err)
	}
	holds, err := ParseHolds(node.Name, node.Annotations[v1alpha1.AnnotationHolds])
	if err != nil || !holds.Equal(Holds{remediateXID}) || node.Annotations["example.com/keep"] != "yes" {
		t.Errorf("annotations %v (holds %v, %v), want the restored hold beside the foreign annotation", node.Annotations, holds, err)
	}
	if !TaintsEqual(OwnedTaints(node.Spec.Taints), []corev1.Taint{unschedulable("xid-79")}) || !slices.Contains(node.Spec.Taints, foreign) {
		t.Errorf("taints %v, want the foreign taint kept and the unschedulable one", node.Spec.Taints)
	}
	patches := w.patches.Load()
	if r, err := ops.Restore(t.Context(), "restore-1", remediateXID); err != nil || r.Any() {
		t.Errorf("a second Restore = %+v, %v; want nothing restored", r, err)
	}
	if w.patches.Load() != patches {
		t.Errorf("a second Restore wrote the node")
	}
}

func TestOpsRestoreRefusesAMalformedAnnotation(t *testing.T) {
	_, c := testenv.Start(t)
	createNode(t, c, "restore-bad", func(n *corev1.Node) {
		n.Annotations = map[string]string{v1alpha1.AnnotationHolds: "{not json"}
	})
	_, err := Ops{Client: c}.Restore(t.Context(), "restore-bad", remediateXID)
	if !errors.Is(err, ErrMalformedHolds) || !strings.Contains(err.Error(), "restore-bad") {
		t.Errorf("Restore = %v, want ErrMalformedHolds naming the node", err)
	}
}
