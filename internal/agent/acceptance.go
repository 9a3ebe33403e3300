package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/nodepolicy"
	"github.com/gpunode/gpunode/internal/record"
)

// acceptance runs node-local acceptance when the controller asked for a generation the agent
// has not answered, and publishes the record. After a release from Maintenance the run
// also decides the serviced GPUs' health (release.go). A record that could not be created is kept
// and created in a later round; the run is not repeated. Every round it first gives the
// health monitor the governing policy's thresholds (policy.go).
func (a *Agent) acceptance(ctx context.Context, gn *v1alpha1.GPUNode, nodeLabels map[string]string, class string) error {
	a.followPolicy(ctx, nodeLabels)
	answered := int64(0)
	if a.last != nil {
		answered = a.last.Generation
	}
	if a.pending == nil && gn.Spec.AcceptanceGeneration > answered {
		release := released(gn)
		obj, err := a.runAcceptance(ctx, gn.Spec.AcceptanceGeneration, nodeLabels, class, release)
		if err != nil {
			return err
		}
		if release {
			a.afterRelease(obj)
		}
		a.pending = obj
	}
	if a.pending == nil {
		return nil
	}
	err := a.cfg.Client.Create(ctx, a.pending.DeepCopy(), client.FieldOwner(v1alpha1.FieldManagerAgent))
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create AcceptanceRecord %s: %w", describe(a.pending), err)
	}
	a.cfg.Log.Info("published acceptance record", "node", a.cfg.NodeName, "record", describe(a.pending))
	a.last, a.pending = Summary(a.pending), nil
	if gn.Spec.AcceptanceGeneration > a.last.Generation {
		a.poke() // asked again meanwhile: answer in the next round
	}
	return nil
}

// runAcceptance gathers the facts (the kernel log included) and runs the acceptance engine
// of `gpunode accept` with the policy that governs the node. With release, every GPU counts
// as serviced from just before the facts are gathered (once the policy is known, so that a
// run that cannot start leaves the GPUs as they were).
func (a *Agent) runAcceptance(ctx context.Context, gen int64, nodeLabels map[string]string, class string, release bool) (*v1alpha1.AcceptanceRecord, error) {
	gp, err := a.governing(ctx, nodeLabels, false)
	if err != nil {
		return nil, err
	}
	pol, ref := nodepolicy.AcceptPolicy(gp, class)
	a.mon.SetThresholds(pol.Thresholds) // the run and the monitor judge by the same table
	// The policy's cache folders are checked as well as the agent's own, as in `gpunode accept`.
	opts := a.cfg.HostOptions
	opts.CacheDirs = append(slices.Clone(opts.CacheDirs), pol.Host.CacheDirs...)

	if release {
		a.serviced(ctx)
	}
	start := a.cfg.Clock()
	facts := a.gather(ctx, true, opts)

	rep, err := accept.Run(ctx, facts, &pol, a.cfg.Clock, nil)
	if err != nil {
		return nil, fmt.Errorf("acceptance of node %q: %w", a.cfg.NodeName, err)
	}
	rep.StartedAt = start // the record's time includes gathering the facts
	rec := record.Build(record.Input{Report: rep, Facts: facts, Policy: ref, Tool: *a.cfg.Tool})
	if rec.Backend == "" {
		rec.Backend = a.cfg.Backend.Name()
	}
	obj := RecordObject(rec, gen)
	if obj.Name == "" {
		return nil, errors.New("acceptance record without an ID")
	}
	a.keepRecord(rec)
	a.cfg.Log.Info("acceptance ran", "node", a.cfg.NodeName, "generation", gen, "policy", ref.Name, "result", rec.Result)
	return obj, nil
}
