package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/simfleet"
)

type simInjectOptions struct {
	fault    simfleet.Fault
	xid      int
	faultSet bool
	gpuSet   bool
	stateDir string
	socket   string
	output   outputFlags
}

func newSimInjectCommand() *cobra.Command {
	o := &simInjectOptions{}
	types := make([]string, 0, len(sim.FaultTypes()))
	for _, t := range sim.FaultTypes() {
		types = append(types, string(t))
	}
	cmd := &cobra.Command{
		Use:   "inject NODE (--xid N | --fault TYPE) [--gpu I]",
		Short: "Inject a fault into a node of a running simulated fleet, or into an agent on simulated GPUs",
		Long: `Inject a fault into one node of the fleet 'gpunode sim fleet' runs with the same --state-dir,
now, through its control socket (--state-dir/fleet.sock); or, with --socket, into the node of
an agent running on simulated GPUs ('gpunode agent --sim', in a pod too), through its
--sim-control-socket (default <agent's --state-dir>/sim.sock). The fault is what a scenario
file's faults entry says (docs/sim-scenarios.md): --xid N is an Xid on GPU --gpu (the
kernel-log line and the state its code implies); --fault TYPE is any fault type:
` + strings.Join(types, ", ") + `.

The node's agent sees it as on a real node; the controller then decides (watch the fleet
table, or 'gpunode explain node NODE'). Exit codes: 0 injected, 1 no fleet or agent answers,
or no such node, 2 bad usage or a fault the node's GPUs refuse.`,
		Example: `  gpunode sim inject sim-002 --gpu 3 --xid 95
  gpunode sim inject sim-001 --gpu 0 --xid 79
  gpunode sim inject sim-003 --gpu 5 --fault ecc-uncorrected --count 2
  gpunode sim inject sim-003 --gpu 1 --fault nvlink-down --links 0,1
  # the agent of a DaemonSet pod on simulated GPUs
  kubectl exec -n gpunode-system POD -c agent -- gpunode sim inject NODE --socket /var/lib/gpunode/sim.sock --gpu 0 --xid 79`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.faultSet, o.gpuSet = cmd.Flags().Changed("fault"), cmd.Flags().Changed("gpu")
			if o.socket != "" && cmd.Flags().Changed("state-dir") {
				return usageErrorf("--socket and --state-dir: give one (--socket is an agent's, --state-dir a fleet's)")
			}
			return runSimInject(cmd.Context(), o, args[0], cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.fault.GPU, "gpu", 0, "index of the GPU the fault hits")
	fs.IntVar(&o.xid, "xid", 0, "inject Xid N (the same as --fault xid --xid N)")
	fs.StringVar(&o.fault.Type, "fault", "", "fault type: "+strings.Join(types, ", "))
	fs.StringVar(&o.fault.Message, "message", "", "the Xid line's text, or a kernel-log fault's whole line")
	fs.Uint64Var(&o.fault.Count, "count", 0, "errors or remapped rows (ecc-*, row-remap-pending; default 1)")
	fs.IntSliceVar(&o.fault.Links, "links", nil, "NVLinks that go down (nvlink-down; default all)")
	fs.IntVar(&o.fault.LinkGen, "link-gen", 0, "downgraded PCIe generation (pcie-downgrade)")
	fs.IntVar(&o.fault.LinkWidth, "link-width", 0, "downgraded PCIe width (pcie-downgrade)")
	fs.IntVar(&o.fault.TemperatureC, "temperature", 0, "GPU temperature in °C while throttled (thermal-throttle)")
	fs.Float64Var(&o.fault.PowerW, "power", 0, "power draw in W while throttled (power-throttle)")
	fs.StringVar(&o.fault.Action, "action", "", "recovery action the GPU reports (recovery-action)")
	fs.Float64Var(&o.fault.Factor, "factor", 0, "bandwidth or compute factor, 0 < F <= 1 (slow-bandwidth, slow-compute)")
	fs.StringVar(&o.stateDir, "state-dir", simfleet.DefaultStateDir(), "state folder of the running fleet (as given to 'gpunode sim fleet')")
	fs.StringVar(&o.socket, "socket", "", "control socket of an agent on simulated GPUs (its --sim-control-socket, e.g. /var/lib/gpunode/sim.sock) instead of a fleet's")
	o.output.add(fs, "the fleet's answer")
	return cmd
}

// request checks the flags and builds the inject request.
func (o *simInjectOptions) request(node string) (simfleet.InjectRequest, error) {
	f := o.fault
	switch {
	case o.xid != 0 && o.faultSet && f.Type != string(sim.FaultXID):
		return simfleet.InjectRequest{}, usageErrorf("--xid %d and --fault %s: --xid injects an xid fault", o.xid, f.Type)
	case o.xid != 0:
		f.Type, f.XID = string(sim.FaultXID), o.xid
	case !o.faultSet:
		return simfleet.InjectRequest{}, usageErrorf("give --xid N or --fault TYPE")
	case f.Type == string(sim.FaultXID):
		return simfleet.InjectRequest{}, usageErrorf("--fault xid needs --xid N")
	}
	if !o.gpuSet && f.Type != string(sim.FaultKernelLog) {
		return simfleet.InjectRequest{}, usageErrorf("--gpu: which GPU does the %s fault hit?", f.Type)
	}
	return simfleet.InjectRequest{Node: node, Fault: f}, nil
}

func runSimInject(ctx context.Context, o *simInjectOptions, node string, out io.Writer) error {
	format, err := o.output.format()
	if err != nil {
		return err
	}
	req, err := o.request(node)
	if err != nil {
		return err
	}
	var resp simfleet.InjectResponse
	if o.socket != "" {
		resp, err = simfleet.InjectAt(ctx, o.socket, req)
	} else {
		resp, err = simfleet.Inject(ctx, o.stateDir, req)
	}
	if errors.Is(err, simfleet.ErrInvalidFault) {
		return usageError(err)
	}
	if err != nil {
		return err
	}
	if format != formatText {
		return writeDocument(out, format, resp)
	}
	what := resp.Fault.Type
	if resp.Fault.Type == string(sim.FaultXID) {
		what = fmt.Sprintf("xid %d", resp.Fault.XID)
	}
	_, _ = fmt.Fprintf(out, "injected %s on GPU %d of %s at %s\n", what, resp.Fault.GPU, resp.Node, resp.At.Format(time.RFC3339Nano))
	if o.socket != "" {
		_, _ = fmt.Fprintf(out, "watch it: gpunode explain node %s\n", resp.Node)
		return nil
	}
	_, _ = fmt.Fprintf(out, "watch it: gpunode explain node %s --kubeconfig %s/%s\n", resp.Node, o.stateDir, simfleet.KubeconfigFile)
	return nil
}
