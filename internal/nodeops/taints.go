package nodeops

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// maxTaintValue is the longest valid label value, and so the longest taint value.
const maxTaintValue = 63

// heldValue is the taint value used when a hold's reason has no usable character.
const heldValue = "held"

// Owns reports whether gpunode owns taint t: the NoSchedule taints with keys
// gpunode.dev/unschedulable and gpunode.dev/not-accepted. Every other taint, including
// those keys with another effect, belongs to someone else and is never changed.
func Owns(t corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule &&
		(t.Key == v1alpha1.TaintUnschedulable || t.Key == v1alpha1.TaintNotAccepted)
}

// DesiredTaints returns the taints a node with the given current taints and holds should
// carry. Every taint gpunode does not own is kept, in order. While holds remain, the node
// carries gpunode.dev/unschedulable=<sanitised reason of the oldest hold>:NoSchedule; while
// an "acceptance" hold exists, it also carries gpunode.dev/not-accepted:NoSchedule. An owned
// taint that should stay keeps its position, so the result equals current when nothing
// changes. The input is not modified.
func DesiredTaints(current []corev1.Taint, holds Holds) []corev1.Taint {
	want := map[string]corev1.Taint{}
	if oldest, ok := holds.Oldest(); ok {
		want[v1alpha1.TaintUnschedulable] = corev1.Taint{
			Key: v1alpha1.TaintUnschedulable, Value: SanitizeReason(oldest.Reason), Effect: corev1.TaintEffectNoSchedule,
		}
	}
	if _, ok := holds.Find(v1alpha1.HoldOwnerAcceptance); ok {
		want[v1alpha1.TaintNotAccepted] = corev1.Taint{
			Key: v1alpha1.TaintNotAccepted, Effect: corev1.TaintEffectNoSchedule,
		}
	}
	out := make([]corev1.Taint, 0, len(current)+len(want))
	placed := map[string]bool{}
	for _, t := range current {
		if !Owns(t) {
			out = append(out, t)
			continue
		}
		w, ok := want[t.Key]
		if !ok || placed[t.Key] {
			continue
		}
		placed[t.Key] = true
		if t.Value == w.Value {
			out = append(out, t) // keep TimeAdded and position as they are
		} else {
			out = append(out, w)
		}
	}
	for _, key := range []string{v1alpha1.TaintNotAccepted, v1alpha1.TaintUnschedulable} {
		if w, ok := want[key]; ok && !placed[key] {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// TaintsEqual reports whether a and b are the same taints in the same order.
func TaintsEqual(a, b []corev1.Taint) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.Taint) bool {
		return x.Key == y.Key && x.Value == y.Value && x.Effect == y.Effect &&
			x.TimeAdded.Equal(y.TimeAdded)
	})
}

// SanitizeReason turns a free-text reason into a valid label (and taint) value: every run of
// characters other than letters, digits, '-', '_' and '.' becomes one '-', the result is cut
// to 63 characters and must start and end with a letter or digit. A reason with no usable
// character becomes "held".
func SanitizeReason(reason string) string {
	var b strings.Builder
	dash := false
	for _, r := range reason {
		switch {
		case r < 128 && (isAlnum(byte(r)) || r == '-' || r == '_' || r == '.'):
			b.WriteRune(r)
			dash = false
		case !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	s := b.String()
	if len(s) > maxTaintValue {
		s = s[:maxTaintValue]
	}
	s = strings.TrimFunc(s, func(r rune) bool { return r >= 128 || !isAlnum(byte(r)) })
	if s == "" {
		return heldValue
	}
	return s
}

func isAlnum(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// AdoptRegistrationTaint returns holds with an "acceptance" hold added when the node
// carries gpunode.dev/not-accepted:NoSchedule but holds records no acceptance hold: the
// kubelet registered the node with that taint before gpunode wrote anything. The adopted
// hold's Since is the node's creation time. adopted is false when nothing was added.
func AdoptRegistrationTaint(taints []corev1.Taint, holds Holds, created time.Time) (Holds, bool) {
	if _, ok := holds.Find(v1alpha1.HoldOwnerAcceptance); ok {
		return holds, false
	}
	if !slices.ContainsFunc(taints, func(t corev1.Taint) bool { return Owns(t) && t.Key == v1alpha1.TaintNotAccepted }) {
		return holds, false
	}
	return Add(holds, Hold{Owner: v1alpha1.HoldOwnerAcceptance, Reason: "registered not accepted", Since: created.UTC()})
}
