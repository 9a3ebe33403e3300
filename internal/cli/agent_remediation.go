package cli

import (
	"context"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/buildinfo"
	"github.com/gpunode/gpunode/internal/evidence"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/podresources"
	"github.com/gpunode/gpunode/internal/recovery"
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
	fs.StringVar(&o.stateDir, "state-dir", "/var/lib/gpunode", "host folder for what must survive a reboot: the remediation step in flight, evidence bundles under evidence/, acceptance records under records/ (the exporter's --records-dir)")
}

// steps are the remediation steps for backend: the simulated node's own with --sim,
// otherwise the configured commands run on this host.
func (o *remediationOptions) steps(backend gpu.Backend, hostRoot string) agent.Steps {
	if sb, isSim := backend.(*sim.Backend); isSim {
		return recovery.Sim{Backend: sb}
	}
	pl, _ := backend.(gpu.ProcessLister)
	if hostRoot == "" {
		hostRoot = "/"
	}
	return &recovery.Host{Processes: pl, ResetCommand: o.resetCommand, RebootCommand: o.rebootCommand,
		PowerCycleCommand: o.powerCycleCommand, Root: os.DirFS(hostRoot)}
}

// journal keeps the step in flight under --state-dir.
func (o *remediationOptions) journal() agent.Journal {
	return agent.FileJournal{Path: filepath.Join(o.stateDir, "remediation-step.json")}
}

// evidence writes bundles under --state-dir/evidence with what the agent knows: the GPU
// backend, the kernel log (the simulated node's, or /dev/kmsg's ring buffer), the
// health monitor's findings and, with a pod source, the pods on the GPUs.
func (o *remediationOptions) evidence(node string, backend gpu.Backend, hostRoot string, findings func() []health.Finding, pods *podresources.Cache) agent.EvidenceWriter {
	if hostRoot == "" {
		hostRoot = "/"
	}
	root := os.DirFS(hostRoot)
	col := evidence.Collector{Node: evidence.NodeFacts{Node: node, Agent: buildinfo.Get().Version},
		Root: root, Backend: backend, Findings: findings}
	if pods != nil { // a nil *Cache in the interface would not be nil
		col.Pods = pods
	}
	if sb, isSim := backend.(*sim.Backend); isSim {
		col.Root, col.Kernel = nil, simKernelRecords{sb}
	} else {
		col.Kernel = evidence.KmsgDevice{Root: root}
	}
	return agent.EvidenceTo(col, &evidence.Store{Dir: filepath.Join(o.stateDir, "evidence")})
}

// simKernelRecords is a simulated node's kernel log as an evidence source.
type simKernelRecords struct{ b *sim.Backend }

func (s simKernelRecords) Records(_ context.Context, w evidence.Window) ([]evidence.KernelRecord, error) {
	var out []evidence.KernelRecord
	for _, l := range s.b.KernelLog() {
		if !l.Time.Before(w.From()) {
			out = append(out, evidence.KernelRecord{Time: l.Time, Level: -1, Text: l.Text})
		}
	}
	return out, nil
}

// findingsOf reads the findings of the agent *a once it exists.
func findingsOf(a **agent.Agent) func() []health.Finding {
	return func() []health.Finding { return (*a).Findings() }
}
