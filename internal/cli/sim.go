package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/simfleet"
	"github.com/gpunode/gpunode/internal/yamlfile"
)

func newSimCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run a simulated GPU fleet on a local API server, and inject faults into it",
		Long: `The embedded demo and test harness: 'gpunode sim fleet' starts a local kube-apiserver and
etcd, gpunode's CRDs, the controller and N node agents on simulated GPUs in one process;
'gpunode sim inject' injects a fault into one of its nodes while it runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("sim needs a subcommand: fleet or inject")
		},
	}
	cmd.AddCommand(newSimFleetCommand(), newSimInjectCommand())
	return cmd
}

type simFleetOptions struct {
	nodes    int
	scenario string
	preset   string
	interval time.Duration
	refresh  time.Duration
	duration time.Duration
	stateDir string
	// presetSet: --preset was given (it conflicts with --scenario).
	presetSet bool
}

func newSimFleetCommand() *cobra.Command {
	o := &simFleetOptions{}
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Run N simulated GPU nodes, the controller and a local API server until interrupted",
		Long: `Start a local kube-apiserver and etcd (the binaries of hack/k8s-test-assets.sh, found through
KUBEBUILDER_ASSETS or that script's cache), install gpunode's CRDs, create the GPUNodePolicy
` + simfleet.PolicyName + ` (every node, remediation's defaults) and N Nodes, and run the controller
(acceptance and remediation) and one agent per node on simulated GPUs (--preset, or a
--scenario file every node runs; docs/sim-scenarios.md), with simulated resets and reboots,
a remediation journal and an evidence store per node under --state-dir.

It prints a fleet table (node, class, healthy/all GPUs, phase, health, holds, remediation
step): redrawn in place on a terminal, printed again with a timestamp when it changes
otherwise. The API server's kubeconfig is written to --state-dir/kubeconfig for kubectl
and 'gpunode explain node'; 'gpunode sim inject' reaches the fleet through
--state-dir/fleet.sock. Stops cleanly on SIGINT or SIGTERM (or after --duration).`,
		Example: `  gpunode sim fleet --nodes 3
  gpunode sim fleet --nodes 50 --scenario examples/scenarios/h100x8-xid79.yaml --interval 1s
  # in another shell
  gpunode sim inject sim-002 --gpu 3 --xid 95
  gpunode explain node sim-002 --kubeconfig /tmp/gpunode-sim-$(id -u)/kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.presetSet = cmd.Flags().Changed("preset")
			return runSimFleet(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.nodes, "nodes", 3, fmt.Sprintf("how many simulated nodes join (1-%d)", simfleet.MaxNodes))
	fs.StringVar(&o.scenario, "scenario", "", "sim scenario file every node runs (GPUs, overrides, timed faults)")
	fs.StringVar(&o.preset, "preset", "h100x8", "sim preset of every node ("+strings.Join(sim.Presets(), ", ")+"); not with --scenario")
	fs.DurationVar(&o.interval, "interval", simfleet.DefaultInterval, "how often the agents publish and poll their GPUs")
	fs.DurationVar(&o.refresh, "refresh", time.Second, "how often the fleet table is read")
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long (0: run until interrupted)")
	fs.StringVar(&o.stateDir, "state-dir", simfleet.DefaultStateDir(), "folder of the kubeconfig, the control socket, the nodes' journals and evidence, and the log")
	return cmd
}

func (o *simFleetOptions) config() (simfleet.Config, error) {
	cfg := simfleet.Config{Nodes: o.nodes, Interval: o.interval, StateDir: o.stateDir}
	switch {
	case o.nodes < 1 || o.nodes > simfleet.MaxNodes:
		return cfg, usageErrorf("--nodes %d: want 1 to %d", o.nodes, simfleet.MaxNodes)
	case o.interval <= 0:
		return cfg, usageErrorf("--interval %s: must be positive", o.interval)
	case o.refresh <= 0:
		return cfg, usageErrorf("--refresh %s: must be positive", o.refresh)
	case o.duration < 0:
		return cfg, usageErrorf("--duration %s: must not be negative", o.duration)
	case o.scenario != "" && o.presetSet:
		return cfg, usageErrorf("--scenario and --preset: give one")
	}
	var err error
	if o.scenario != "" {
		var data []byte
		if data, err = yamlfile.ReadFile(o.scenario); err != nil {
			return cfg, usageErrorf("--scenario %s: %w", o.scenario, err)
		}
		cfg.Scenario, err = sim.Parse(o.scenario, data)
	} else {
		cfg.Scenario, err = sim.PresetScenario(o.preset)
	}
	if err != nil {
		return cfg, usageError(err)
	}
	return cfg, nil
}

func runSimFleet(ctx context.Context, o *simFleetOptions, out, errOut io.Writer) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	notice(errOut, "starting a simulated fleet of %d nodes: an API server, etcd and the controllers (a few seconds)...", cfg.Nodes)
	f, err := simfleet.Start(ctx, cfg)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "simulated fleet: %d nodes (%s, %d GPUs each) on the API server %s\n", cfg.Nodes, cfg.Scenario.Name, len(cfg.Scenario.Devices), f.Host())
	fmt.Fprintf(&b, "  kubeconfig:     %s\n", f.Kubeconfig())
	fmt.Fprintf(&b, "  inject a fault: gpunode sim inject %s --gpu 0 --xid 95 --state-dir %s\n", f.Nodes()[0], o.stateDir)
	fmt.Fprintf(&b, "  explain a node: gpunode explain node %s --kubeconfig %s\n", f.Nodes()[0], f.Kubeconfig())
	fmt.Fprintf(&b, "  log:            %s\n", filepath.Join(cfg.StateDir, simfleet.LogFile))
	header := b.String()
	terminal := isTerminal(out)
	if !terminal {
		_, _ = fmt.Fprint(out, header)
	}
	drawTable(ctx, f, out, o.refresh, terminal, header)
	if err := f.Stop(); err != nil {
		return fmt.Errorf("stopping the simulated fleet: %w", err)
	}
	_, _ = fmt.Fprintf(out, "simulated fleet stopped after %s; evidence and journals remain in %s\n", time.Since(f.Started()).Round(time.Second), o.stateDir)
	return nil
}

// drawTable shows the fleet table every refresh until ctx ends: redrawn in place on a
// terminal, else printed again (with the time since the start) whenever it changed.
func drawTable(ctx context.Context, f *simfleet.Fleet, out io.Writer, refresh time.Duration, terminal bool, header string) {
	tick := time.NewTicker(refresh)
	defer tick.Stop()
	last := ""
	for {
		rows, err := simfleet.Snapshot(ctx, f.Client())
		table := ""
		if err != nil {
			table = fmt.Sprintf("reading the fleet: %v\n", err)
		} else {
			table = simfleet.Render(rows)
		}
		if ctx.Err() != nil {
			return
		}
		since := time.Since(f.Started()).Round(100 * time.Millisecond)
		switch {
		case terminal:
			// Home, clear to the end, then the table: no scrolling, no flicker.
			_, _ = fmt.Fprintf(out, "\x1b[H\x1b[J%s%s  +%s  (Ctrl-C stops)\n%s", header, time.Now().Format(time.TimeOnly), since, table)
		case table != last:
			_, _ = fmt.Fprintf(out, "--- +%s\n%s", since, table)
		}
		last = table
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
