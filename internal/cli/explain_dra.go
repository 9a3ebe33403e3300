package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctrlremediation "github.com/gpunode/gpunode/internal/controller/remediation"
)

// deviceTaintExplanation is one DeviceTaintRule a hold of the node owns: what it selects
// (driver/pool/device, "*" for every one) with which effect, since when.
type deviceTaintExplanation struct {
	Name    string    `json:"name"`
	Hold    string    `json:"hold"`
	Devices string    `json:"devices"`
	Taint   string    `json:"taint"`
	Effect  string    `json:"effect"`
	Since   time.Time `json:"since,omitzero"`
}

// explainDeviceTaints lists the DeviceTaintRules the node's holds own, by name; a cluster
// that does not serve DeviceTaintRules has none.
func explainDeviceTaints(ctx context.Context, c client.Client, node string) ([]deviceTaintExplanation, error) {
	var list resourcev1.DeviceTaintRuleList
	err := c.List(ctx, &list, client.MatchingLabels(ctrlremediation.RuleLabels(node, "")))
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the DeviceTaintRules of node %q: %w", node, err)
	}
	out := make([]deviceTaintExplanation, 0, len(list.Items))
	for _, r := range list.Items {
		if a := r.Annotations[ctrlremediation.AnnotationRuleNode]; a != "" && a != node {
			continue // another node whose label value is shortened to the same
		}
		e := deviceTaintExplanation{
			Name: r.Name, Hold: r.Labels[ctrlremediation.LabelRuleHold], Devices: ctrlremediation.RuleDevices(r),
			Taint: r.Spec.Taint.Key + "=" + r.Spec.Taint.Value, Effect: string(r.Spec.Taint.Effect), Since: r.CreationTimestamp.UTC(),
		}
		if t := r.Spec.Taint.TimeAdded; t != nil {
			e.Since = t.UTC()
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b deviceTaintExplanation) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// deviceTaintsText renders the rules, one line each (nothing when there are none).
func deviceTaintsText(rules []deviceTaintExplanation) string {
	var b strings.Builder
	for _, r := range rules {
		fmt.Fprintf(&b, "device taint rule: %s (hold %s) taints %s %s:%s", r.Name, r.Hold, r.Devices, r.Taint, r.Effect)
		if !r.Since.IsZero() {
			b.WriteString(" since " + r.Since.Format(time.RFC3339))
		}
		b.WriteString("\n")
	}
	return b.String()
}
