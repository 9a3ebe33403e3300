package agent

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
)

// The GPU Operator pauses its NVML clients on a node by setting their deploy labels
// (nvidia.com/gpu.deploy.<operand>) to a value that starts "paused-for-": its driver
// manager to "paused-for-driver-upgrade" while it unloads the driver, its MIG manager to
// "paused-for-mig-change" while it changes the MIG layout; "true" again when done.
const (
	gpuOperatorDeployPrefix = "nvidia.com/gpu.deploy."
	gpuOperatorPausedPrefix = "paused-for-"
)

// pausedBy is the GPU Operator label that pauses the agent, as key=value: the first by key
// of the node's nvidia.com/gpu.deploy.* labels whose value starts "paused-for-"; "" when
// none does.
func pausedBy(lbls map[string]string) string {
	var keys []string
	for k, v := range lbls {
		if strings.HasPrefix(k, gpuOperatorDeployPrefix) && strings.HasPrefix(v, gpuOperatorPausedPrefix) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	slices.Sort(keys)
	return cut(keys[0]+"="+lbls[keys[0]], 320)
}

// stackStatus is status.stack for the facts: the driver is ready when the GPUs could be
// read with a driver version, the toolkit when the L0 runtime and CDI checks pass
// (accept.ToolkitReadiness). Since keeps prev's time while Ready does not change. It is
// pure.
func stackStatus(f *accept.Facts, paused string, prev *v1alpha1.StackStatus, now time.Time) *v1alpha1.StackStatus {
	st := &v1alpha1.StackStatus{Paused: paused}
	switch {
	case paused != "":
		st.Driver.Message = "paused by " + paused + ": the agent released the GPUs"
	case f.GPU == nil:
		st.Driver.Message = "the GPUs cannot be read: " + errText(f.GPUErr)
	case f.GPU.Driver.Version == "":
		st.Driver.Message = "the driver reports no version"
	default:
		st.Driver.Ready, st.Driver.Version = true, cut(f.GPU.Driver.Version, 64)
		st.Driver.Message = "NVML answers, driver " + f.GPU.Driver.Version
	}
	st.Driver.Message = cut(st.Driver.Message, 1024)
	ready, msg := accept.ToolkitReadiness(f)
	st.Toolkit.Ready, st.Toolkit.Message = ready, cut(msg, 1024)
	var was v1alpha1.StackStatus
	if prev != nil {
		was = *prev
	}
	st.Driver.Since = since(was.Driver, st.Driver.Ready, prev == nil, now)
	st.Toolkit.Since = since(was.Toolkit, st.Toolkit.Ready, prev == nil, now)
	return st
}

// since is when an operand's readiness last changed.
func since(prev v1alpha1.OperandReadiness, ready, first bool, now time.Time) metav1.Time {
	if !first && prev.Ready == ready && !prev.Since.IsZero() {
		return prev.Since
	}
	return metav1.NewTime(now.UTC().Truncate(time.Second))
}

func errText(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// notePause reports a change of the node's pause label to Config.OnPause.
func (a *Agent) notePause(lbls map[string]string) string {
	p := pausedBy(lbls)
	if p == a.paused {
		return p
	}
	if p != "" {
		a.cfg.Log.Info("the GPU Operator paused the node's GPU clients; releasing the GPUs", "node", a.cfg.NodeName, "label", p)
	} else {
		a.cfg.Log.Info("the GPU Operator's pause ended; opening the GPUs again", "node", a.cfg.NodeName, "was", a.paused)
	}
	a.paused = p
	if a.cfg.OnPause != nil {
		a.cfg.OnPause(p)
	}
	return p
}

// watchNode wakes the loop when the node's GPU Operator pause label changes, so that the
// GPUs are released at once rather than at the next --interval. Like watchSpec it starts
// again after a capped backoff, and nothing depends on it.
func (a *Agent) watchNode(ctx context.Context, w client.WithWatch) {
	seen := ""
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		err := a.watchNodeOnce(ctx, w, &seen)
		if ctx.Err() != nil {
			return
		}
		backoff = nextBackoff(backoff, a.cfg.MinBackoff, a.cfg.MaxBackoff)
		a.cfg.Log.Debug("Node watch ended; watching again", "node", a.cfg.NodeName, "in", backoff, "err", err)
		if !sleep(ctx, backoff, nil) {
			return
		}
	}
}

func (a *Agent) watchNodeOnce(ctx context.Context, w client.WithWatch, seen *string) error {
	wi, err := w.Watch(ctx, &corev1.NodeList{}, client.MatchingFields{"metadata.name": a.cfg.NodeName})
	if err != nil {
		return err
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, open := <-wi.ResultChan():
			if !open {
				return nil
			}
			n, isNode := ev.Object.(*corev1.Node)
			if !isNode || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			if p := pausedBy(n.Labels); p != *seen {
				*seen = p
				a.poke()
			}
		}
	}
}
