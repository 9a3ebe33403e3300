package cli

import (
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/buildinfo"
	"github.com/gpunode/gpunode/internal/evidence"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/platform"
	"github.com/gpunode/gpunode/internal/podresources"
)

// remediationOptions are how the agent carries out the controller's remediation steps on
// this node: they depend on how the agent is deployed, so they are the agent's flags.
type remediationOptions struct {
	resetCommand      []string
	rebootCommand     []string
	powerCycleCommand []string
	stateDir          string
}

func (o *remediationOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.resetCommand, "reset-command", nil, "command that resets one GPU, \"{gpu}\" standing for its UUID (default: nvidia-smi --gpu-reset -i {gpu}); a reset is refused while any process uses the GPU")
	fs.StringSliceVar(&o.rebootCommand, "reboot-command", nil, "command that reboots the node, e.g. nsenter,-t,1,-m,--,systemctl,reboot (default: none; reboot-node is refused)")
	fs.StringSliceVar(&o.powerCycleCommand, "power-cycle-command", nil, "hook that power-cycles the node through its BMC (default: none; power-cycle is refused)")
	fs.StringVar(&o.stateDir, "state-dir", "/var/lib/gpunode", "host folder for what must outlive the agent: the remediation step in flight, the kernel-log cursor (kmsg.cursor), the XIDs recovery steps cleared in this boot (cleared-xids.json), evidence bundles under evidence/, acceptance records under records/ (the last result on /metrics)")
}

// steps are the remediation steps of the platform: the simulated node's own with --sim,
// otherwise the configured commands run on this host.
func (o *remediationOptions) steps(plat *platform.Platform) agent.Steps {
	return plat.Steps(platform.Commands{Reset: o.resetCommand, Reboot: o.rebootCommand, PowerCycle: o.powerCycleCommand})
}

// journal keeps the step in flight under --state-dir.
func (o *remediationOptions) journal() agent.Journal {
	return agent.FileJournal{Path: filepath.Join(o.stateDir, "remediation-step.json")}
}

// evidence writes bundles under --state-dir/evidence with what the agent knows: the GPU
// backend, the platform's kernel log (the simulated node's, or /dev/kmsg's ring buffer),
// the health monitor's findings and per-GPU health and, with a pod source, the pods on the
// GPUs.
func (o *remediationOptions) evidence(node string, plat *platform.Platform, a **agent.Agent, pods *podresources.Cache) agent.EvidenceWriter {
	col := evidence.Collector{Node: evidence.NodeFacts{Node: node, Agent: buildinfo.Get().Version},
		Backend: plat.Backend, Findings: findingsOf(a), Health: func() *evidence.HealthState { return (*a).EvidenceHealth() }}
	if pods != nil { // a nil *Cache in the interface would not be nil
		col.Pods = pods
	}
	var onHost bool
	if col.Kernel, onHost = plat.EvidenceKernel(); onHost {
		col.Root = plat.Root()
	}
	return agent.EvidenceTo(col, &evidence.Store{Dir: filepath.Join(o.stateDir, "evidence")})
}

// findingsOf reads the findings of the agent *a once it exists.
func findingsOf(a **agent.Agent) func() []health.Finding {
	return func() []health.Finding { return (*a).Findings() }
}
