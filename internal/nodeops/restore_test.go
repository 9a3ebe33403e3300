package nodeops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

func TestRestoreHolds(t *testing.T) {
	failed := Hold{Owner: v1alpha1.HoldOwnerAcceptance, Reason: "gpu-count: 7 GPUs found", Since: t0}
	operator := Hold{Owner: "operator", Reason: "rack move", Since: t2}
	cases := []struct {
		name         string
		annotated    Holds
		taints       []corev1.Taint
		due          Holds
		wantHolds    Holds
		wantRestored []string // holds by owner, then taints
	}{
		{
			name: "a hold stripped of its entry and its taints gets both back", due: Holds{failed},
			wantHolds:    Holds{failed},
			wantRestored: []string{"acceptance", notAccepted.ToString(), "gpunode.dev/unschedulable=gpu-count-7-GPUs-found:NoSchedule"},
		},
		{
			name:      "a hold stripped of its taints only gets the taints back and keeps its entry",
			annotated: Holds{{Owner: failed.Owner, Reason: "older reason", Since: t1}}, taints: []corev1.Taint{foreign}, due: Holds{failed},
			wantHolds:    Holds{{Owner: failed.Owner, Reason: "older reason", Since: t1}},
			wantRestored: []string{notAccepted.ToString(), "gpunode.dev/unschedulable=older-reason:NoSchedule"},
		},
		{
			name:      "a hold stripped of its entry only gets the entry back and keeps the taints",
			annotated: nil, taints: []corev1.Taint{unschedulable("xid-79")}, due: Holds{remediateXID},
			wantHolds: Holds{remediateXID}, wantRestored: []string{"remediation"},
		},
		{
			name:   "an acceptance hold adopted from the registration taint is replaced by the owner's record",
			taints: []corev1.Taint{notAccepted}, due: Holds{failed},
			wantHolds:    Holds{failed},
			wantRestored: []string{"acceptance", "gpunode.dev/unschedulable=gpu-count-7-GPUs-found:NoSchedule"},
		},
		{
			name:      "a registration taint with nothing due is adopted and not called a restore",
			taints:    []corev1.Taint{notAccepted},
			wantHolds: Holds{{Owner: v1alpha1.HoldOwnerAcceptance, Reason: "registered not accepted", Since: t0}},
		},
		{
			name:      "a node that shows the hold and its taints needs nothing",
			annotated: Holds{remediateXID}, taints: []corev1.Taint{unschedulable("xid-79")}, due: Holds{remediateXID},
			wantHolds: Holds{remediateXID},
		},
		{
			name:      "another owner's hold and a foreign taint are kept, and the oldest hold names the taint",
			annotated: Holds{operator}, taints: []corev1.Taint{foreign}, due: Holds{remediateXID},
			wantHolds:    Holds{operator, remediateXID},
			wantRestored: []string{"remediation", "gpunode.dev/unschedulable=xid-79:NoSchedule"},
		},
		{
			name:      "the stripped taint of a hold nobody said is due comes back with any write, and is said",
			annotated: Holds{operator}, taints: []corev1.Taint{foreign},
			wantHolds: Holds{operator}, wantRestored: []string{"gpunode.dev/unschedulable=rack-move:NoSchedule"},
		},
		{
			name:      "two due holds stripped together both come back",
			due:       Holds{remediateXID, failed},
			wantHolds: Holds{failed, remediateXID},
			wantRestored: []string{"acceptance", "remediation", notAccepted.ToString(),
				"gpunode.dev/unschedulable=gpu-count-7-GPUs-found:NoSchedule"},
		},
		{
			name:      "a changed unschedulable value is put back",
			annotated: Holds{remediateXID}, taints: []corev1.Taint{unschedulable("free")}, due: Holds{remediateXID},
			wantHolds: Holds{remediateXID}, wantRestored: []string{"gpunode.dev/unschedulable=xid-79:NoSchedule"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, dueBefore := tc.annotated.Render(), tc.due.Render()
			holds, r := RestoreHolds(tc.annotated, tc.taints, t0, tc.due)
			if !holds.Equal(tc.wantHolds) {
				t.Errorf("RestoreHolds = %v, want %v", holds, tc.wantHolds)
			}
			var got []string
			for _, h := range r.Holds {
				got = append(got, h.Owner)
				if d, _ := tc.due.Find(h.Owner); !h.Since.Equal(d.Since) || h.Reason != d.Reason {
					t.Errorf("restored hold %+v, want the owner's record %+v", h, d)
				}
			}
			for _, tt := range r.Taints {
				got = append(got, tt.ToString())
			}
			if strings.Join(got, ",") != strings.Join(tc.wantRestored, ",") {
				t.Errorf("restored %v, want %v", got, tc.wantRestored)
			}
			if r.Any() != (len(tc.wantRestored) > 0) {
				t.Errorf("Any() = %v for %+v", r.Any(), r)
			}
			if tc.annotated.Render() != before || tc.due.Render() != dueBefore {
				t.Errorf("RestoreHolds modified its input")
			}
		})
	}
}

func TestRestoredSaysWhatWasPutBack(t *testing.T) {
	r := Restored{Holds: Holds{remediateXID}, Taints: []corev1.Taint{unschedulable("xid-79")}}
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
	var told []Restored
	ops := Ops{Client: c, Due: Holds{remediateXID}, Restored: func(r Restored) { told = append(told, r) }}
	after, r, err := ops.Restore(t.Context(), "restore-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Holds) != 1 || r.Holds[0].Owner != v1alpha1.HoldOwnerRemediation || len(r.Taints) != 1 {
		t.Errorf("restored %+v, want the remediation entry and its taint", r)
	}
	if !after.Equal(Holds{remediateXID}) || len(told) != 1 || told[0].String() != r.String() {
		t.Errorf("Restore left %v and told %v, want the restored hold and one report of it", after, told)
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
	if after, r, err := ops.Restore(t.Context(), "restore-1"); err != nil || r.Any() || !after.Equal(Holds{remediateXID}) {
		t.Errorf("a second Restore = %v, %+v, %v; want the hold shown and nothing restored", after, r, err)
	}
	if w.patches.Load() != patches || len(told) != 1 {
		t.Errorf("a second Restore wrote the node or told of a restore (%d reports)", len(told))
	}
}

func TestOpsRestoreRefusesAMalformedAnnotation(t *testing.T) {
	_, c := testenv.Start(t)
	createNode(t, c, "restore-bad", func(n *corev1.Node) {
		n.Annotations = map[string]string{v1alpha1.AnnotationHolds: "{not json"}
	})
	_, _, err := Ops{Client: c, Due: Holds{remediateXID}}.Restore(t.Context(), "restore-bad")
	if !errors.Is(err, ErrMalformedHolds) || !strings.Contains(err.Error(), "restore-bad") {
		t.Errorf("Restore = %v, want ErrMalformedHolds naming the node", err)
	}
}

func TestAHoldStrippedJustBeforeAnOwnersWriteComesBackWithItsSince(t *testing.T) {
	failed := Hold{Owner: v1alpha1.HoldOwnerAcceptance, Reason: "gpu-count: 7 GPUs found", Since: t0}
	cases := []struct {
		name  string
		write func(o Ops, ctx context.Context, node string) error
	}{
		{"the owner re-takes its hold with a new reason", func(o Ops, ctx context.Context, node string) error {
			return o.Hold(ctx, node, v1alpha1.HoldOwnerAcceptance, "gpu-count: 6 GPUs found")
		}},
		{"another hold of the same owner's controller is released", func(o Ops, ctx context.Context, node string) error {
			return o.Release(ctx, node, "gpu-api")
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, admin := testenv.Start(t)
			name := fmt.Sprintf("strip-before-write-%d", i)
			held := Holds{failed, {Owner: "gpu-api", Reason: "switch", Since: t1}}
			createNode(t, admin, name, func(n *corev1.Node) {
				n.Annotations = map[string]string{v1alpha1.AnnotationHolds: held.Render()}
				n.Spec.Taints = DesiredTaints(nil, held)
			})
			// Someone strips the whole hold after the owner's write read the Node: the write
			// conflicts and reads again.
			var w writes
			c := counted(t, cfg, &w, func(ctx context.Context, _ client.Object) {
				node := getNode(t, admin, name)
				delete(node.Annotations, v1alpha1.AnnotationHolds)
				node.Spec.Taints = nil
				if err := admin.Update(ctx, node); err != nil {
					t.Errorf("stripping the hold: %v", err)
				}
			})
			var told []Restored
			ops := Ops{Client: c, Clock: func() time.Time { return t2 }, Due: Holds{failed},
				Restored: func(r Restored) { told = append(told, r) }}
			if err := tc.write(ops, t.Context(), name); err != nil {
				t.Fatal(err)
			}
			node := getNode(t, admin, name)
			holds, err := ParseHolds(name, node.Annotations[v1alpha1.AnnotationHolds])
			if err != nil {
				t.Fatal(err)
			}
			if h, ok := holds.Find(v1alpha1.HoldOwnerAcceptance); !ok || !h.Since.Equal(t0) {
				t.Errorf("holds %v, want the acceptance hold back with its since %s", holds, t0)
			}
			if _, ok := ownedTaints(node)[v1alpha1.TaintNotAccepted]; !ok || len(ownedTaints(node)) != 2 {
				t.Errorf("taints %v, want not-accepted and unschedulable", node.Spec.Taints)
			}
			if w.conflicts.Load() == 0 {
				t.Errorf("the strip did not race the write (no conflict): the test tested nothing")
			}
			if len(told) != 1 || len(told[0].Holds) != 1 || !told[0].Holds[0].Since.Equal(t0) {
				t.Errorf("told %v, want one report of the acceptance hold restored with since %s", told, t0)
			}
		})
	}
}
