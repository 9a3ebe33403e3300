package nodeops

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

var (
	foreign      = corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
	foreignExec  = corev1.Taint{Key: v1alpha1.TaintUnschedulable, Value: "mine", Effect: corev1.TaintEffectNoExecute}
	notAccepted  = corev1.Taint{Key: v1alpha1.TaintNotAccepted, Effect: corev1.TaintEffectNoSchedule}
	acceptHold   = Hold{Owner: v1alpha1.HoldOwnerAcceptance, Reason: "new node", Since: t0}
	remediateXID = Hold{Owner: v1alpha1.HoldOwnerRemediation, Reason: "xid 79", Since: t1}
)

func unschedulable(value string) corev1.Taint {
	return corev1.Taint{Key: v1alpha1.TaintUnschedulable, Value: value, Effect: corev1.TaintEffectNoSchedule}
}

func TestDesiredTaints(t *testing.T) {
	cases := []struct {
		name    string
		current []corev1.Taint
		holds   Holds
		want    []corev1.Taint
	}{
		{"no holds and no taints need no taints", nil, nil, nil},
		{"the first acceptance hold adds both taints", nil, Holds{acceptHold}, []corev1.Taint{notAccepted, unschedulable("new-node")}},
		{"the first remediation hold adds only the unschedulable taint", nil, Holds{remediateXID}, []corev1.Taint{unschedulable("xid-79")}},
		{
			"a second owner keeps the taint with the oldest hold's reason",
			[]corev1.Taint{unschedulable("xid-79")},
			Holds{remediateXID, {Owner: "upgrade", Reason: "driver", Since: t2}},
			[]corev1.Taint{unschedulable("xid-79")},
		},
		{
			"an older hold taken later names the taint",
			[]corev1.Taint{unschedulable("xid-79")},
			Holds{remediateXID, {Owner: "operator", Reason: "rack move", Since: t0}},
			[]corev1.Taint{unschedulable("rack-move")},
		},
		{
			"releasing one of two keeps the unschedulable taint and drops not-accepted",
			[]corev1.Taint{notAccepted, unschedulable("new-node")},
			Holds{remediateXID},
			[]corev1.Taint{unschedulable("xid-79")},
		},
		{"releasing the last hold removes the taints", []corev1.Taint{notAccepted, unschedulable("new-node")}, nil, nil},
		{
			"a foreign taint survives in its place",
			[]corev1.Taint{foreign, unschedulable("xid-79"), foreignExec},
			nil,
			[]corev1.Taint{foreign, foreignExec},
		},
		{
			"a foreign taint survives when holds are added",
			[]corev1.Taint{foreign},
			Holds{acceptHold},
			[]corev1.Taint{foreign, notAccepted, unschedulable("new-node")},
		},
		{
			"owned taints that are right keep their position",
			[]corev1.Taint{unschedulable("xid-79"), foreign},
			Holds{remediateXID},
			[]corev1.Taint{unschedulable("xid-79"), foreign},
		},
		{
			"a duplicated owned taint is written once",
			[]corev1.Taint{unschedulable("xid-79"), unschedulable("old")},
			Holds{remediateXID},
			[]corev1.Taint{unschedulable("xid-79")},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.current)
			got := DesiredTaints(tc.current, tc.holds)
			if !TaintsEqual(got, tc.want) {
				t.Errorf("DesiredTaints = %v, want %v", got, tc.want)
			}
			if !TaintsEqual(tc.current, before) {
				t.Errorf("DesiredTaints modified its input")
			}
			if again := DesiredTaints(got, tc.holds); !TaintsEqual(again, got) {
				t.Errorf("DesiredTaints is not stable: %v then %v", got, again)
			}
		})
	}
}

func TestSanitizeReason(t *testing.T) {
	cases := []struct{ name, reason, want string }{
		{"a valid value is kept", "xid-79_gpu.0", "xid-79_gpu.0"},
		{"runs of spaces and punctuation become one dash", "XID 79: GPU fell off the bus!", "XID-79-GPU-fell-off-the-bus"},
		{"leading and trailing symbols are trimmed", "  (reset) ", "reset"},
		{"non-ASCII letters become dashes", "Überhitzung 95°C", "berhitzung-95-C"},
		{"an empty reason becomes held", "", "held"},
		{"a reason of only symbols becomes held", "!!! ???", "held"},
		{"a long reason is cut to 63 characters", strings.Repeat("a", 100), strings.Repeat("a", 63)},
		{"a cut that ends on a dash is trimmed", strings.Repeat("a", 62) + " b", strings.Repeat("a", 62)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := SanitizeReason(tc.reason)
			if got != tc.want {
				t.Errorf("SanitizeReason(%q) = %q, want %q", tc.reason, got, tc.want)
			}
			if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
				t.Errorf("SanitizeReason(%q) = %q is not a label value: %v", tc.reason, got, errs)
			}
		})
	}
}

func TestSanitizeReasonAlwaysGivesALabelValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 8))
	alphabet := []rune("aZ09-_. :/!é€\t\n")
	for range 2000 {
		r := make([]rune, rng.IntN(120))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if got := SanitizeReason(string(r)); len(validation.IsValidLabelValue(got)) > 0 || got == "" {
			t.Fatalf("SanitizeReason(%q) = %q is not a non-empty label value", string(r), got)
		}
	}
}

func TestAdoptRegistrationTaint(t *testing.T) {
	created := t0.Add(-time.Hour)
	cases := []struct {
		name        string
		taints      []corev1.Taint
		holds       Holds
		wantAdopted bool
	}{
		{"a registration taint without an acceptance hold is adopted", []corev1.Taint{notAccepted}, nil, true},
		{"an existing acceptance hold is kept as it is", []corev1.Taint{notAccepted}, Holds{acceptHold}, false},
		{"no registration taint adopts nothing", []corev1.Taint{foreign}, Holds{remediateXID}, false},
		{"the key with another effect is not ours and adopts nothing", []corev1.Taint{{Key: v1alpha1.TaintNotAccepted, Effect: corev1.TaintEffectNoExecute}}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, adopted := AdoptRegistrationTaint(tc.taints, tc.holds, created)
			if adopted != tc.wantAdopted {
				t.Fatalf("adopted = %v, want %v", adopted, tc.wantAdopted)
			}
			h, ok := got.Find(v1alpha1.HoldOwnerAcceptance)
			if tc.wantAdopted && (!ok || !h.Since.Equal(created)) {
				t.Errorf("adopted hold = %v, %v; want acceptance since %v", h, ok, created)
			}
			if !tc.wantAdopted && !got.Equal(tc.holds) {
				t.Errorf("holds = %v, want unchanged %v", got, tc.holds)
			}
		})
	}
}
