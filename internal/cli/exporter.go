package cli

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/kmsg"
	"github.com/gpunode/gpunode/internal/metrics"
	"github.com/gpunode/gpunode/internal/monitor"
	"github.com/gpunode/gpunode/internal/platform"
	"github.com/gpunode/gpunode/internal/podresources"
)

type exporterOptions struct {
	gpu        gpuOptions
	listen     []string
	webConfig  string
	interval   time.Duration
	recordsDir string
	podSocket  string
	kernelLog  string
	node       string
}

func newExporterCommand() *cobra.Command {
	o := &exporterOptions{}
	cmd := &cobra.Command{
		Use:   "exporter",
		Short: "Serve this node's GPU metrics and health to Prometheus (dcgm-exporter compatible)",
		Long: `Serve Prometheus metrics on /metrics: dcgm-exporter's default GPU metrics under their
names and labels (DCGM_FI_DEV_*), computed on each scrape from one NVML read, plus gpunode's
own: XID counters, per-GPU health and required action, findings, the driver's recovery
action, the last acceptance result. The health monitor (kernel log, device events, counter
polls every --interval) runs in the same process. Pods holding a GPU label its series
(kubelet pod-resources API; an absent socket means no pod labels).

/healthz answers 200 while the GPUs answer, /metrics the metrics, / a landing page.
--web.config.file enables TLS and basic auth (Prometheus exporter-toolkit format).
docs/metrics.md lists every metric. Stops cleanly on SIGINT or SIGTERM.`,
		Example: `  gpunode exporter
  gpunode exporter --web.listen-address 127.0.0.1:9400 --records-dir /var/lib/gpunode/records
  gpunode exporter --sim examples/scenarios/h100x8-xid79.yaml --sim-elapsed 30m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runExporter(cmd.Context(), o, cmd.OutOrStdout(), nil)
		},
	}
	fs := cmd.Flags()
	o.gpu.addFlags(fs)
	fs.StringSliceVar(&o.listen, "web.listen-address", []string{":9400"}, "address to serve on (repeatable)")
	fs.StringVar(&o.webConfig, "web.config.file", "", "TLS and basic-auth configuration (exporter-toolkit web-config.yml format)")
	fs.DurationVar(&o.interval, "interval", 10*time.Second, "health monitor counter polling interval")
	fs.StringVar(&o.recordsDir, "records-dir", "", "folder of acceptance records whose newest result to export")
	fs.StringVar(&o.podSocket, "pod-resources-socket", podresources.DefaultSocket, "kubelet pod-resources socket for pod labels (\"\" to disable)")
	fs.StringVar(&o.kernelLog, "kernel-log", defaultKernelLog, "kernel log to follow for XIDs: /dev/kmsg, or \"none\"")
	fs.StringVar(&o.node, "node-name", "", "Hostname label (default: $NODE_NAME, else the hostname)")
	return cmd
}

// runExporter serves until ctx ends. ready, when set, is called with the bound addresses
// once the listeners are open.
func runExporter(ctx context.Context, o *exporterOptions, out io.Writer, ready func([]net.Addr)) error {
	if o.interval <= 0 {
		return usageErrorf("--interval must be positive")
	}
	srv := metricsServer{name: "exporter", listen: o.listen, webConfig: o.webConfig, flag: "--web.listen-address"}
	if len(o.listen) == 0 {
		return usageErrorf("--web.listen-address: give at least one address")
	}
	if err := checkWebConfig(o.webConfig); err != nil {
		return err
	}
	plat, err := o.gpu.openPlatform(platform.Options{KernelLog: o.kernelLog})
	if err != nil {
		return err
	}
	defer func() { _ = plat.Close() }()
	log := namedLogger("exporter")

	var wg sync.WaitGroup
	defer wg.Wait() // runs after cancel: every goroutine below has stopped when this returns
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The standalone exporter's own engine: it sees recoveries in its polls (a reset or a
	// reboot seen by the driver, then the per-GPU check), as the agent's does.
	xids := metrics.NewXIDCounter()
	mon, err := monitor.New(monitor.Config{Backend: plat.Backend, Interval: o.interval,
		Kernel: plat.KernelFollower(&kmsg.Follower{Start: kmsg.StartBeginning}), BootID: plat.BootID(),
		OnFinding: xids.Observe, Log: log})
	if err != nil {
		return err
	}
	wg.Go(func() { _ = mon.Run(ctx) }) // Run fails only by its context

	e := engine{health: mon, xids: xids, maxAge: max(3*o.interval, 30*time.Second)}
	if o.podSocket != "" {
		e.pods = podresources.New(podresources.Options{Socket: o.podSocket, Log: log})
		wg.Go(func() { e.pods.Run(ctx) })
	}
	if o.recordsDir != "" {
		e.records = os.DirFS(o.recordsDir)
	}
	exp, err := newNodeExporter(ctx, &wg, plat, (&factOptions{node: o.node}).nodeName(), e)
	if err != nil {
		return err
	}
	handler, err := exporterHandler(exp, e.maxAge)
	if err != nil {
		return err
	}
	listeners, err := srv.open(ctx, out)
	if err != nil {
		return err
	}
	addrs := make([]net.Addr, len(listeners))
	for i, l := range listeners {
		addrs[i] = l.Addr()
	}
	return srv.serve(ctx, listeners, handler, log, func() {
		if ready != nil {
			ready(addrs)
		}
	})
}
