package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/pflag"
)

// healthOptions are the agent's probe endpoints.
type healthOptions struct {
	addr string
}

// defaultHealthAddr is the agent's probe address: the controller's is :8081 and the
// metrics :9400 (--metrics-bind-address).
const defaultHealthAddr = ":8082"

func (o *healthOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.addr, "health-probe-bind-address", defaultHealthAddr, `address of /healthz (liveness: 200 while the agent runs) and /readyz (readiness: 200 once the health monitor has polled the GPUs) ("" or "0": off)`)
}

// listen opens the probe address; nil when the probes are off.
func (o *healthOptions) listen(ctx context.Context) (net.Listener, error) {
	if o.addr == "" || o.addr == "0" {
		return nil, nil
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.addr)
	if err != nil {
		return nil, fmt.Errorf("--health-probe-bind-address %s: %w", o.addr, err)
	}
	return l, nil
}

// healthHandler answers the probes: /healthz 200 while the process serves, /readyz 200
// when ready returns nil, 503 with its reason before.
func healthHandler(ready func() error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// serveHealth serves the probes on l until stop is called, which shuts the server down
// and waits for it (l nil: nothing is served).
func serveHealth(l net.Listener, ready func() error, log *slog.Logger) (stop func()) {
	if l == nil {
		return func() {}
	}
	srv := &http.Server{Handler: healthHandler(ready), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("health probes stopped", "err", err)
		}
	}()
	log.Info("health probes served", "address", l.Addr().String(), "liveness", "/healthz", "readiness", "/readyz")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
}
