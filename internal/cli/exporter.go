package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/buildinfo"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/nvml"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/kmsg"
	"github.com/gpunode/gpunode/internal/metrics"
	"github.com/gpunode/gpunode/internal/monitor"
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
	if len(o.listen) == 0 {
		return usageErrorf("--web.listen-address: give at least one address")
	}
	if o.webConfig != "" {
		if err := web.Validate(o.webConfig); err != nil {
			return usageErrorf("--web.config.file %s: %w", o.webConfig, err)
		}
	}
	backend, err := o.gpu.openBackend()
	if err != nil {
		return err
	}
	defer func() { _ = backend.Close() }()
	tel, ok := backend.(gpu.TelemetrySource)
	if !ok {
		return fmt.Errorf("the %s GPU backend has no telemetry", backend.Name())
	}
	log := namedLogger("exporter")

	var wg sync.WaitGroup
	defer wg.Wait() // runs after cancel: every goroutine below has stopped when this returns
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	xids := metrics.NewXIDCounter()
	mon, err := monitor.New(monitor.Config{Backend: backend, Interval: o.interval, Kernel: o.kernelSource(backend),
		OnFinding: xids.Observe, Log: log})
	if err != nil {
		return err
	}
	wg.Go(func() { _ = mon.Run(ctx) }) // Run fails only by its context

	if nb, isNVML := backend.(*nvml.Backend); isNVML {
		// The energy counter costs 4 ms a GPU: it is read in the background, the rest on scrape.
		st := nvml.NewScrapeTelemetry(nb, nvml.DefaultEnergyRefresh)
		wg.Go(func() { st.Run(ctx) })
		tel = st
	}
	opts := metrics.Options{Telemetry: tel, Inventory: backend, Hostname: (&factOptions{node: o.node}).nodeName(),
		Health: mon, XIDs: xids}
	if o.podSocket != "" {
		cache := podresources.New(podresources.Options{Socket: o.podSocket, Log: log})
		wg.Go(func() { cache.Run(ctx) })
		opts.Pods = podLookup{cache}
	}
	if o.recordsDir != "" {
		opts.Records = os.DirFS(o.recordsDir)
	}
	exp, err := metrics.New(opts)
	if err != nil {
		return err
	}
	handler, err := exporterHandler(exp, max(3*o.interval, 30*time.Second))
	if err != nil {
		return err
	}
	listeners := make([]net.Listener, 0, len(o.listen))
	addrs := make([]net.Addr, 0, len(o.listen))
	for _, a := range o.listen {
		l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", a)
		if err != nil {
			for _, l := range listeners {
				_ = l.Close()
			}
			return fmt.Errorf("--web.listen-address %s: %w", a, err)
		}
		listeners = append(listeners, l)
		addrs = append(addrs, l.Addr())
		if _, err := fmt.Fprintf(out, "gpunode exporter: serving http://%s/metrics\n", l.Addr()); err != nil {
			return err
		}
	}
	return serve(ctx, listeners, handler, o, log, ready, addrs)
}

// serve runs the HTTP server on the listeners until ctx ends, then shuts it down, letting
// scrapes in flight finish (up to 5 s).
func serve(ctx context.Context, listeners []net.Listener, h http.Handler, o *exporterOptions, log *slog.Logger,
	ready func([]net.Addr), addrs []net.Addr) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	systemd := false
	flags := &web.FlagConfig{WebListenAddresses: &o.listen, WebSystemdSocket: &systemd, WebConfigFile: &o.webConfig}
	done := make(chan error, 1)
	go func() { done <- web.ServeMultiple(listeners, srv, flags, log) }()
	if ready != nil {
		ready(addrs)
	}
	select {
	case err := <-done:
		return fmt.Errorf("serving metrics: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("stopping the metrics server: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving metrics: %w", err)
	}
	return nil
}

// exporterHandler routes /metrics, /healthz and the landing page.
func exporterHandler(exp *metrics.Exporter, maxAge time.Duration) (http.Handler, error) {
	reg, err := metrics.NewRegistry(exp)
	if err != nil {
		return nil, err
	}
	landing, err := web.NewLandingPage(web.LandingConfig{
		Name:        "gpunode exporter",
		Description: "GPU metrics (dcgm-exporter compatible) and GPU health of this node",
		Version:     buildinfo.Get().Version,
		Links: []web.LandingLinks{
			{Address: "/metrics", Text: "Metrics"},
			{Address: "/healthz", Text: "Health", Description: "200 while the GPUs answer"},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("landing page: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 8,
		Registry:            reg, // promhttp_metric_handler_* for the exporter's own scrapes
	}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := exp.Healthy(r.Context(), maxAge); err != nil {
			http.Error(w, "unhealthy: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("/", landing)
	return mux, nil
}

// kernelSource is the kernel log the monitor follows: the simulated node's own with --sim,
// none for "none", else the live kernel log from boot (XIDs since boot count).
func (o *exporterOptions) kernelSource(b gpu.Backend) monitor.KernelSource {
	if sb, isSim := b.(*sim.Backend); isSim && o.kernelLog == defaultKernelLog {
		return monitor.SimKernel(sb, 0)
	}
	if o.kernelLog == "none" {
		return nil
	}
	return monitor.FollowKmsg(&kmsg.Follower{Path: o.kernelLog, Start: kmsg.StartBeginning})
}

// podLookup adapts the pod-resources cache to the metrics package.
type podLookup struct{ c *podresources.Cache }

func (p podLookup) PodsFor(uuid string) []metrics.Pod {
	pods := p.c.PodsFor(uuid)
	if len(pods) == 0 {
		return nil
	}
	out := make([]metrics.Pod, len(pods))
	for i, q := range pods {
		out[i] = metrics.Pod{Namespace: q.Namespace, Name: q.Name, Container: q.Container}
	}
	return out
}
