package simfleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// The control API, served over HTTP on the unix socket fleet.sock in the state folder
// (owner-only, like the folder):
//
//	POST /v1/inject  {"node": "sim-002", "fault": {"gpu": 3, "type": "xid", "xid": 95}}
//	                 200 {"node": ..., "fault": ..., "at": RFC 3339}; 404 unknown node;
//	                 400 a fault the node's GPUs refuse (the reason in "error")
//	GET  /v1/nodes   200 {"nodes": ["sim-001", ...]}
//
// for example: curl --unix-socket STATE/fleet.sock -d '{"node":"sim-002","fault":{"gpu":3,"type":"xid","xid":95}}' http://fleet/v1/inject

// maxSocketPath is the longest unix socket path Linux accepts (sun_path less its NUL).
const maxSocketPath = 107

// Errors of the control API.
var (
	// ErrUnknownNode: the fleet has no node of that name.
	ErrUnknownNode = errors.New("no such node in the simulated fleet")
	// ErrInvalidFault: the node's GPUs refuse the fault (a GPU index out of range, a
	// field that does not apply).
	ErrInvalidFault = errors.New("invalid fault")
	// ErrNoFleet: no fleet answers on the state folder's socket.
	ErrNoFleet = errors.New("no simulated fleet is running")
)

// Fault is a fault as the control API carries it: sim.Fault's fields (docs/sim-scenarios.md).
type Fault struct {
	GPU          int     `json:"gpu"`
	Type         string  `json:"type"`
	XID          int     `json:"xid,omitempty"`
	Message      string  `json:"message,omitempty"`
	Count        uint64  `json:"count,omitempty"`
	Links        []int   `json:"links,omitempty"`
	LinkGen      int     `json:"linkGen,omitempty"`
	LinkWidth    int     `json:"linkWidth,omitempty"`
	TemperatureC int     `json:"temperatureC,omitempty"`
	PowerW       float64 `json:"powerW,omitempty"`
	Action       string  `json:"action,omitempty"`
	Factor       float64 `json:"factor,omitempty"`
}

// Sim is the simulated fault.
func (f Fault) Sim() sim.Fault {
	return sim.Fault{GPU: f.GPU, Type: sim.FaultType(f.Type), XID: f.XID, Message: f.Message, Count: f.Count,
		Links: f.Links, LinkGen: f.LinkGen, LinkWidth: f.LinkWidth, TemperatureC: f.TemperatureC,
		PowerW: f.PowerW, Action: gpu.RecoveryAction(f.Action), Factor: f.Factor}
}

// InjectRequest asks the fleet to inject Fault into Node.
type InjectRequest struct {
	Node  string `json:"node"`
	Fault Fault  `json:"fault"`
}

// InjectResponse is the fleet's answer: the fault was injected At.
type InjectResponse struct {
	InjectRequest
	At    time.Time `json:"at,omitzero"`
	Error string    `json:"error,omitempty"`
}

// serveControl serves the control API until ctx ends.
func (f *Fleet) serveControl(ctx context.Context) error {
	l, err := (&net.ListenConfig{}).Listen(ctx, "unix", f.Socket())
	if err != nil {
		return fmt.Errorf("listening on the control socket %s: %w", f.Socket(), err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/inject", f.handleInject)
	mux.HandleFunc("GET /v1/nodes", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string][]string{"nodes": f.Nodes()})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	f.run("control socket", func() error {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serving %s: %w", f.Socket(), err)
		}
		return nil
	})
	f.run("control socket shutdown", func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	return nil
}

func (f *Fleet) handleInject(w http.ResponseWriter, r *http.Request) {
	var req InjectRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, InjectResponse{Error: fmt.Sprintf("%v: the request body: %v", ErrInvalidFault, err)})
		return
	}
	resp := InjectResponse{InjectRequest: req}
	err := f.Inject(req.Node, req.Fault.Sim())
	switch {
	case errors.Is(err, ErrUnknownNode):
		resp.Error = err.Error()
		writeJSON(w, http.StatusNotFound, resp)
	case err != nil:
		resp.Error = err.Error()
		writeJSON(w, http.StatusBadRequest, resp)
	default:
		resp.At = time.Now().UTC()
		writeJSON(w, http.StatusOK, resp)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Inject asks the fleet whose state folder is stateDir to inject req's fault. Its errors
// wrap ErrNoFleet, ErrUnknownNode or ErrInvalidFault when those are the cause.
func Inject(ctx context.Context, stateDir string, req InjectRequest) (InjectResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return InjectResponse{}, fmt.Errorf("encoding the inject request: %w", err)
	}
	var resp InjectResponse
	code, err := call(ctx, stateDir, http.MethodPost, "/v1/inject", body, &resp)
	if err != nil {
		return InjectResponse{}, err
	}
	switch code {
	case http.StatusOK:
		return resp, nil
	case http.StatusNotFound:
		return resp, fmt.Errorf("%w: %s", ErrUnknownNode, strings.TrimPrefix(resp.Error, ErrUnknownNode.Error()+": "))
	case http.StatusBadRequest:
		return resp, fmt.Errorf("%w: %s", ErrInvalidFault, resp.Error)
	}
	return resp, fmt.Errorf("the fleet at %s answered %d: %s", stateDir, code, resp.Error)
}

// call makes one request of the control API and decodes the answer into out.
func call(ctx context.Context, stateDir, method, path string, body []byte, out any) (int, error) {
	sock := filepath.Join(stateDir, SocketFile)
	if _, err := os.Stat(sock); err != nil {
		return 0, fmt.Errorf("%w with state folder %s (no %s): start one with `gpunode sim fleet`", ErrNoFleet, stateDir, SocketFile)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}, Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(ctx, method, "http://fleet"+path, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("building the request to %s: %w", sock, err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%w with state folder %s: %w", ErrNoFleet, stateDir, err)
	}
	defer func() { _ = res.Body.Close() }()
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(out); err != nil {
		return res.StatusCode, fmt.Errorf("decoding the answer of %s %s: %w", method, sock, err)
	}
	return res.StatusCode, nil
}

// prepareStateDir creates the state folder, refusing one a running fleet uses, and
// clears what a previous fleet left (its socket, kubeconfig and node folders).
func prepareStateDir(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the state folder %s: %w", dir, err)
	}
	var nodes map[string][]string
	if _, err := call(ctx, dir, http.MethodGet, "/v1/nodes", nil, &nodes); err == nil {
		return fmt.Errorf("a simulated fleet already runs with state folder %s: stop it, or give another --state-dir", dir)
	}
	for _, p := range []string{SocketFile, KubeconfigFile, nodesDir} {
		if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
			return fmt.Errorf("clearing the state folder %s: %w", dir, err)
		}
	}
	return nil
}

// DefaultStateDir is the state folder when none is given: gpunode-sim-UID in the
// temporary folder.
func DefaultStateDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("gpunode-sim-%d", os.Getuid()))
}
