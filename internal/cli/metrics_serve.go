package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/gpunode/gpunode/internal/buildinfo"
	"github.com/gpunode/gpunode/internal/metrics"
	"github.com/gpunode/gpunode/internal/platform"
	"github.com/gpunode/gpunode/internal/podresources"
)

// metricsServer is one /metrics endpoint on a node: the metrics of one health engine (the
// agent's, or the standalone exporter's), served on every listener.
type metricsServer struct {
	name      string // the command, in its "serving" lines
	listen    []string
	webConfig string
	flag      string // the listen flag, in errors
}

// engine is what the exporter reads of one health engine.
type engine struct {
	health  metrics.HealthSource
	xids    *metrics.XIDCounter
	pods    *podresources.Cache // nil: no pod labels
	records fs.FS               // nil: no acceptance series
	// maxAge is how old the last good GPU read may be for /healthz to answer 200.
	maxAge time.Duration
}

// checkWebConfig refuses a web configuration that does not parse (exit 2).
func checkWebConfig(path string) error {
	if path == "" {
		return nil
	}
	if err := web.Validate(path); err != nil {
		return usageErrorf("--web.config.file %s: %w", path, err)
	}
	return nil
}

// newNodeExporter is the metrics of plat's GPUs and of the engine e; the telemetry's
// background refresh runs on wg until ctx ends.
func newNodeExporter(ctx context.Context, wg *sync.WaitGroup, plat *platform.Platform, hostname string, e engine) (*metrics.Exporter, error) {
	tel, refresh, err := plat.Telemetry()
	if err != nil {
		return nil, err
	}
	wg.Go(func() { refresh(ctx) })
	opts := metrics.Options{Telemetry: tel, Inventory: plat.Backend, Hostname: hostname, Health: e.health, XIDs: e.xids,
		Records: e.records}
	if e.pods != nil { // a nil *Cache in the interface would not be nil
		opts.Pods = podLookup{e.pods}
	}
	return metrics.New(opts)
}

// open listens on every address; the first that fails closes the others.
func (m metricsServer) open(ctx context.Context, out io.Writer) ([]net.Listener, error) {
	if len(m.listen) == 0 {
		return nil, usageErrorf("%s: give at least one address", m.flag)
	}
	listeners := make([]net.Listener, 0, len(m.listen))
	for _, a := range m.listen {
		if err := checkListenAddress(a); err != nil {
			return nil, usageErrorf("%s %q: %w", m.flag, a, err)
		}
	}
	for _, a := range m.listen {
		l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", a)
		if err != nil {
			for _, l := range listeners {
				_ = l.Close()
			}
			var dns *net.DNSError
			if errors.As(err, &dns) { // a host name that names no address: the input is wrong
				return nil, usageErrorf("%s %s: %w", m.flag, a, err)
			}
			return nil, fmt.Errorf("%s %s: %w", m.flag, a, err)
		}
		listeners = append(listeners, l)
		if out != nil {
			if _, err := fmt.Fprintf(out, "gpunode %s: serving http://%s/metrics\n", m.name, l.Addr()); err != nil {
				return nil, err
			}
		}
	}
	return listeners, nil
}

// serve runs the HTTP server on the listeners until ctx ends, then shuts it down, letting
// scrapes in flight finish (up to 5 s). ready, when set, is called once it serves.
func (m metricsServer) serve(ctx context.Context, listeners []net.Listener, h http.Handler, log *slog.Logger, ready func()) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	systemd := false
	flags := &web.FlagConfig{WebListenAddresses: &m.listen, WebSystemdSocket: &systemd, WebConfigFile: &m.webConfig}
	done := make(chan error, 1)
	go func() { done <- web.ServeMultiple(listeners, srv, flags, log) }()
	if ready != nil {
		ready()
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

// checkListenAddress refuses an address that is not HOST:PORT with a port number (HOST may
// be empty: every address), before anything listens.
func checkListenAddress(a string) error {
	_, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("want HOST:PORT, such as :9400 or 127.0.0.1:9400: %w", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q: want a number from 0 to 65535", port)
	}
	return nil
}
