package remediation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
	"github.com/gpunode/gpunode/internal/remediation"
)

// On a node whose GPUs are published through DRA (ResourceSlices of any driver: gpunode's
// gpu.gpunode.dev, NVIDIA's gpu.nvidia.com), remediation's hold is mirrored by
// DeviceTaintRules, so that the scheduler places no new claim on the held devices (and,
// while the hold drains, evicts the pods that use them) whichever driver publishes them.
const (
	// DeviceTaintKey is the key of the taint the rules put on held devices; the value is
	// the hold's owner.
	DeviceTaintKey = "gpunode.dev/remediation"
	// LabelRuleNode and LabelRuleHold label each rule with its node and its hold (label
	// values: a node name longer than a label value is shortened with a hash).
	LabelRuleNode = v1alpha1.LabelNode
	LabelRuleHold = "gpunode.dev/hold"
	// AnnotationRuleNode is the node's full name on each rule.
	AnnotationRuleNode = "gpunode.dev/node-name"
	// DriverGPUNode is the DRA driver of gpunode's own agent.
	DriverGPUNode = acceptance.DriverGPUNode
)

// HoldScope is what one hold keeps out of service: the whole node (GPUs empty) or the
// GPUs with these UUIDs. Drains: the hold evicts the pods using them.
type HoldScope struct {
	Hold   string
	GPUs   []string
	Drains bool
}

// ScopeOf is the scope of remediation's hold as decision d leaves it: nil when the node is
// not held after the decision; the episode's GPUs for a per-GPU step of a GPU-only episode
// (restart-app, reset-gpu), otherwise the whole node. It drains once the decision evicts
// pods or the state shows a drain started.
func ScopeOf(f remediation.Facts, d remediation.Decision) *HoldScope {
	held := slices.ContainsFunc(f.Holds, func(h remediation.Hold) bool { return h.Owner == remediation.OwnerRemediation })
	if d.Hold == remediation.HoldRelease || (!held && d.Hold != remediation.HoldPlace) {
		return nil
	}
	s := d.State
	sc := &HoldScope{Hold: remediation.OwnerRemediation}
	if s.Step.PerGPU() && !s.NodeWide && len(s.GPUs) > 0 {
		sc.GPUs = f.UUIDs(s.GPUs)
	}
	sc.Drains = !s.DrainStarted.IsZero() || slices.ContainsFunc(d.Actions, func(a remediation.Action) bool {
		return a.Kind == remediation.ActionEvictPods
	})
	return sc
}

// RulePlan is the DeviceTaintRules a node's holds call for, and the held GPUs no published
// device matches on a node that publishes GPUs (their rule waits for the driver to publish
// them).
type RulePlan struct {
	Rules     []resourcev1.DeviceTaintRule
	Unmatched []string
}

// PlanDeviceTaintRules is the rules that keep sc's devices out of service on node, from
// the ResourceSlices published for it (a slice whose spec.nodeName or spec.pool.name is
// the node; of each pool only the newest generation counts). gpus are the UUIDs of every
// GPU of the node: a driver publishes the node's GPUs when it is gpunode's or one of its
// devices carries one of those UUIDs; other drivers' devices (NICs) are never selected.
//
// A per-GPU hold selects each device whose uuid (or, for a MIG device, parentUUID) is a
// held GPU's; a node hold selects every device of each GPU driver's pool. Each rule is
// named gpunode-<node>-<hold>; when the hold needs more than one, -<driver> is appended
// when several pools publish GPUs (and -<pool> when it is not named after the node), and
// -<device> for a device's rule. Each is labelled with its node and hold. It is pure; nil
// sc plans none.
func PlanDeviceTaintRules(node string, sc *HoldScope, gpus []string, published []resourcev1.ResourceSlice) RulePlan {
	if sc == nil {
		return RulePlan{}
	}
	pools := acceptance.NodeGPUPools(node, gpus, published)
	type target struct{ driver, pool, device string }
	var targets []target
	matched := map[string]bool{}
	for _, p := range pools {
		if len(sc.GPUs) == 0 {
			targets = append(targets, target{driver: p.Driver, pool: p.Pool})
			continue
		}
		for _, dev := range p.Devices {
			for _, attr := range []string{acceptance.AttributeUUID, acceptance.AttributeParentUUID} {
				if u := acceptance.DeviceAttribute(p.Driver, dev, attr); u != "" && slices.Contains(sc.GPUs, u) {
					targets = append(targets, target{driver: p.Driver, pool: p.Pool, device: dev.Name})
					if attr == acceptance.AttributeUUID {
						matched[u] = true
					}
					break
				}
			}
		}
	}
	plan := RulePlan{}
	for _, u := range sc.GPUs {
		if len(pools) > 0 && !matched[u] { // a node without GPU pools does not run DRA
			plan.Unmatched = append(plan.Unmatched, u)
		}
	}
	effect := resourcev1.DeviceTaintEffectNoSchedule
	if sc.Drains {
		effect = resourcev1.DeviceTaintEffectNoExecute
	}
	base := "gpunode-" + node + "-" + sc.Hold
	for _, t := range targets {
		name := base
		if len(targets) > 1 && len(pools) > 1 { // the pool's driver (and pool) tell them apart
			name += "-" + t.driver
			if t.pool != node {
				name += "-" + t.pool
			}
		}
		if len(targets) > 1 && t.device != "" {
			name += "-" + t.device
		}
		sel := &resourcev1.DeviceTaintSelector{Driver: ptr.To(t.driver), Pool: ptr.To(t.pool)}
		if t.device != "" {
			sel.Device = ptr.To(t.device)
		}
		plan.Rules = append(plan.Rules, resourcev1.DeviceTaintRule{
			TypeMeta: metav1.TypeMeta{APIVersion: resourcev1.SchemeGroupVersion.String(), Kind: "DeviceTaintRule"},
			ObjectMeta: metav1.ObjectMeta{
				Name:        RuleName(name),
				Labels:      RuleLabels(node, sc.Hold),
				Annotations: map[string]string{AnnotationRuleNode: node},
			},
			Spec: resourcev1.DeviceTaintRuleSpec{
				DeviceSelector: sel,
				Taint:          resourcev1.DeviceTaint{Key: DeviceTaintKey, Value: labelValue(sc.Hold), Effect: effect},
			},
		})
	}
	slices.SortFunc(plan.Rules, func(a, b resourcev1.DeviceTaintRule) int { return strings.Compare(a.Name, b.Name) })
	return plan
}

// RuleLabels are the labels of node's rules for hold ("" hold: every rule of the node).
func RuleLabels(node, hold string) map[string]string {
	l := map[string]string{LabelRuleNode: labelValue(node)}
	if hold != "" {
		l[LabelRuleHold] = labelValue(hold)
	}
	return l
}

// RuleName sanitises name into an object name: lower case, characters outside [a-z0-9.-]
// turned into '-', and a name longer than 253 characters cut and suffixed with a hash of
// the whole.
func RuleName(name string) string {
	return shorten(sanitise(name, func(r rune) bool { return r == '-' || r == '.' }), validation.DNS1123SubdomainMaxLength)
}

// labelValue is s as a label value (63 characters at most, hashed when longer).
func labelValue(s string) string {
	return shorten(sanitise(s, func(r rune) bool { return r == '-' || r == '.' || r == '_' }), validation.LabelValueMaxLength)
}

func sanitise(s string, keep func(rune) bool) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', keep(r):
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, s)
	return strings.TrimFunc(s, func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') })
}

func shorten(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return strings.TrimRight(s[:limit-9], "-._") + "-" + hex.EncodeToString(sum[:4])
}

// RuleDevices describes what a rule selects, for Events and explain.
func RuleDevices(r resourcev1.DeviceTaintRule) string {
	sel := r.Spec.DeviceSelector
	if sel == nil {
		return "no device"
	}
	deref := func(p *string, none string) string {
		if p == nil {
			return none
		}
		return *p
	}
	return fmt.Sprintf("%s/%s/%s", deref(sel.Driver, "*"), deref(sel.Pool, "*"), deref(sel.Device, "*")) // driver/pool/device
}
