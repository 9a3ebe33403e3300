package agent

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/evidence"
	"github.com/gpunode/gpunode/internal/health"
)

// EvidenceHealth is the health monitor's per-GPU state and counters, as a bundle's
// health.json holds them (evidence.Collector.Health).
func (a *Agent) EvidenceHealth() *evidence.HealthState {
	return &evidence.HealthState{GPUs: a.mon.Health(), Stats: a.mon.Stats()}
}

// EvidenceTo is the EvidenceWriter that collects a bundle with col and writes it to store.
// The trigger is the most severe finding on the request's GPUs (the request's reason when
// the monitor holds none: the controller may know of a fault the agent never saw).
func EvidenceTo(col evidence.Collector, store *evidence.Store) EvidenceWriter {
	return func(ctx context.Context, req v1alpha1.RemediationRequest, findings []health.Finding) (*v1alpha1.EvidenceSummary, error) {
		trigger := triggerOf(req, findings)
		c := col.Collect(ctx, trigger)
		c.GPUs = slices.Clone(req.GPUs)
		if col.Pods != nil && len(req.GPUs) > 0 { // Collect asked for the trigger's GPU only
			c.Pods = nil
			for _, g := range req.GPUs {
				for _, p := range col.Pods.PodsFor(g) {
					c.Pods = append(c.Pods, evidence.PodOnGPU{GPU: g, Namespace: p.Namespace, Name: p.Name, Container: p.Container})
				}
			}
		}
		sum, err := store.Write(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("writing the evidence bundle: %w", err)
		}
		out := &v1alpha1.EvidenceSummary{SHA256: sum.SHA256, Path: sum.Path, SizeBytes: sum.Bytes,
			Created: metav1.NewTime(sum.Created), Trigger: truncate(req.Reason, 256)}
		if out.Trigger == "" {
			out.Trigger = truncate(trigger.Cause, 256)
		}
		for _, p := range c.Pods {
			key := p.Namespace + "/" + p.Name
			if !slices.Contains(out.Pods, key) && len(out.Pods) < v1alpha1.MaxEvidencePods {
				out.Pods = append(out.Pods, key)
			}
		}
		return out, nil
	}
}

// triggerOf picks the finding a bundle is captured for.
func triggerOf(req v1alpha1.RemediationRequest, findings []health.Finding) health.Finding {
	var best *health.Finding
	for i := range findings {
		f := &findings[i]
		if len(req.GPUs) > 0 && !slices.Contains(req.GPUs, f.GPU) {
			continue
		}
		if best == nil || f.Action.Rank() > best.Action.Rank() {
			best = f
		}
	}
	if best != nil {
		return *best
	}
	gpu := ""
	if len(req.GPUs) > 0 {
		gpu = req.GPUs[0]
	}
	return health.Finding{GPU: gpu, GPUIndex: -1, Cause: "remediation-request", Summary: req.Reason}
}
