package cli

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpunode/gpunode/internal/metrics"
	"github.com/gpunode/gpunode/internal/platform"
	"github.com/gpunode/gpunode/internal/podresources"
)

// agentMetricsOptions are the agent's /metrics endpoint: the exporter's metrics, served
// from the agent's own health engine.
type agentMetricsOptions struct {
	addr      string
	webConfig string
}

// defaultMetricsAddr is the port dcgm-exporter and 'gpunode exporter' serve on.
const defaultMetricsAddr = ":9400"

func (o *agentMetricsOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.addr, "metrics-bind-address", defaultMetricsAddr, `address of /metrics (dcgm-exporter compatible GPU metrics and the health monitor's series, as 'gpunode exporter' serves them), /healthz (200 while the GPUs answer) and a landing page ("" or "0": off)`)
	fs.StringVar(&o.webConfig, "web.config.file", "", "TLS and basic-auth configuration of --metrics-bind-address (exporter-toolkit web-config.yml format)")
}

func (o *agentMetricsOptions) enabled() bool { return o.addr != "" && o.addr != "0" }

// check refuses a web configuration that does not parse (exit 2).
func (o *agentMetricsOptions) check() error { return checkWebConfig(o.webConfig) }

// serve serves the metrics of the agent's engine (health, XIDs; the acceptance series from
// the records the agent keeps in <state-dir>/records) until stop is called, which waits for
// the server and the telemetry refresh to end. Off: nothing is served.
func (o *agentMetricsOptions) serve(ctx context.Context, plat *platform.Platform, node string, health metrics.HealthSource,
	xids *metrics.XIDCounter, pods *podresources.Cache, stateDir string, interval time.Duration, log *slog.Logger) (stop func(), err error) {
	if !o.enabled() {
		return func() {}, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stop = func() { cancel(); wg.Wait() }
	e := engine{health: health, xids: xids, pods: pods, records: os.DirFS(filepath.Join(stateDir, "records")),
		maxAge: max(3*interval, 30*time.Second)}
	exp, err := newNodeExporter(ctx, &wg, plat, node, e)
	if err != nil {
		stop()
		return nil, err
	}
	handler, err := exporterHandler(exp, e.maxAge)
	if err != nil {
		stop()
		return nil, err
	}
	srv := metricsServer{name: "agent", listen: []string{o.addr}, webConfig: o.webConfig, flag: "--metrics-bind-address"}
	listeners, err := srv.open(ctx, nil)
	if err != nil {
		stop()
		return nil, err
	}
	log.Info("metrics served", "address", listeners[0].Addr().String(), "path", "/metrics")
	wg.Go(func() {
		if err := srv.serve(ctx, listeners, handler, log, nil); err != nil {
			log.Error("metrics server stopped", "err", err)
		}
	})
	return stop, nil
}
