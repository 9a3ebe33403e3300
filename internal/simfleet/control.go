package simfleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// The control API, served over HTTP on a unix socket (owner-only): a fleet's fleet.sock in
// its state folder, or an agent's --sim-control-socket (<state-dir>/sim.sock) when it runs
// on simulated GPUs, whose one node is the agent's:
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
	// ErrNoControl: nothing answers on a control socket given by its path.
	ErrNoControl = errors.New("nothing serves the simulated GPUs' control API")
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

// Injector is what the control API injects faults into: a Fleet's nodes, or the one node
// of an agent running on simulated GPUs (Node).
type Injector interface {
	// Nodes are the node names, in order.
	Nodes() []string
	// Inject injects fault into the named node now; an unknown node wraps ErrUnknownNode.
	Inject(node string, fault sim.Fault) error
}

// Node is one simulated node as an Injector: the agent's own when it runs with --sim and
// serves the control API on its --sim-control-socket.
type Node struct {
	Name    string
	Backend *sim.Backend
	// Log receives a line per fault injected; discarded when nil.
	Log *slog.Logger
}

// Nodes is the node's name.
func (n Node) Nodes() []string { return []string{n.Name} }

// Inject injects fault into the node's simulated GPUs, when node is its name.
func (n Node) Inject(node string, fault sim.Fault) error {
	if node != n.Name {
		return fmt.Errorf("%w: %q (this agent's node is %s)", ErrUnknownNode, node, n.Name)
	}
	if err := n.Backend.Inject(fault); err != nil {
		return fmt.Errorf("inject into node %s: %w", node, err)
	}
	if n.Log != nil {
		n.Log.Info("fault injected", "node", node, "gpu", fault.GPU, "type", fault.Type, "xid", fault.XID)
	}
	return nil
}

// ControlHandler is the control API of inj.
func ControlHandler(inj Injector) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/inject", func(w http.ResponseWriter, r *http.Request) { handleInject(inj, w, r) })
	mux.HandleFunc("GET /v1/nodes", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string][]string{"nodes": inj.Nodes()})
	})
	return mux
}

// ControlServer serves an Injector's control API on a unix socket.
type ControlServer struct {
	path string
	l    net.Listener
	srv  *http.Server
}

// ListenControl opens the unix socket at path (owner-only) for inj's control API; Serve
// then serves it. A socket file nothing answers on (left by a process that died) is
// replaced; one a running server answers on is refused.
func ListenControl(ctx context.Context, path string, inj Injector) (*ControlServer, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("control socket %s: the path is longer than %d bytes", path, maxSocketPath)
	}
	if _, err := os.Lstat(path); err == nil {
		var nodes map[string][]string
		if _, err := call(ctx, socketEndpoint(path), http.MethodGet, "/v1/nodes", nil, &nodes); err == nil {
			return nil, fmt.Errorf("control socket %s: another process serves it (nodes %v)", path, nodes["nodes"])
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("control socket %s: removing the stale socket: %w", path, err)
		}
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on the control socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return &ControlServer{path: path, l: l, srv: &http.Server{Handler: ControlHandler(inj), ReadHeaderTimeout: 5 * time.Second}}, nil
}

// Serve serves until ctx ends, then lets requests in flight finish (up to 2 s) and closes
// the socket, which removes its file.
func (s *ControlServer) Serve(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- s.srv.Serve(s.l) }()
	select {
	case err := <-done:
		return fmt.Errorf("serving %s: %w", s.path, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if serr := <-done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("serving %s: %w", s.path, serr))
	}
	return err
}

// serveControl serves the fleet's control API until ctx ends.
func (f *Fleet) serveControl(ctx context.Context) error {
	s, err := ListenControl(ctx, f.Socket(), f)
	if err != nil {
		return err
	}
	f.run("control socket", func() error { return s.Serve(ctx) })
	return nil
}

func handleInject(inj Injector, w http.ResponseWriter, r *http.Request) {
	var req InjectRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, InjectResponse{Error: fmt.Sprintf("%v: the request body: %v", ErrInvalidFault, err)})
		return
	}
	resp := InjectResponse{InjectRequest: req}
	err := inj.Inject(req.Node, req.Fault.Sim())
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
	return inject(ctx, fleetEndpoint(stateDir), req)
}

// InjectAt asks the control API on the unix socket at path to inject req's fault: a
// fleet's fleet.sock, or the socket of an agent on simulated GPUs (--sim-control-socket).
// Its errors wrap ErrNoControl, ErrUnknownNode or ErrInvalidFault when those are the cause.
func InjectAt(ctx context.Context, socket string, req InjectRequest) (InjectResponse, error) {
	return inject(ctx, socketEndpoint(socket), req)
}

func inject(ctx context.Context, ep endpoint, req InjectRequest) (InjectResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return InjectResponse{}, fmt.Errorf("encoding the inject request: %w", err)
	}
	var resp InjectResponse
	code, err := call(ctx, ep, http.MethodPost, "/v1/inject", body, &resp)
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
	return resp, fmt.Errorf("%s answered %d: %s", ep.sock, code, resp.Error)
}

// endpoint is a control socket and what to say when nothing answers on it.
type endpoint struct {
	sock string
	// absent explains why nothing answered (cause: the socket's stat or dial error).
	absent func(cause error) error
}

// fleetEndpoint is the socket of the fleet whose state folder is stateDir.
func fleetEndpoint(stateDir string) endpoint {
	return endpoint{sock: filepath.Join(stateDir, SocketFile), absent: func(cause error) error {
		if errors.Is(cause, fs.ErrNotExist) {
			return fmt.Errorf("%w with state folder %s (no %s): start one with `gpunode sim fleet`", ErrNoFleet, stateDir, SocketFile)
		}
		return fmt.Errorf("%w with state folder %s: %w", ErrNoFleet, stateDir, cause)
	}}
}

// socketEndpoint is a control socket given by its path.
func socketEndpoint(sock string) endpoint {
	return endpoint{sock: sock, absent: func(cause error) error {
		return fmt.Errorf("%w on %s: %w (an agent serves it only on simulated GPUs, --sim)", ErrNoControl, sock, cause)
	}}
}

// call makes one request of the control API and decodes the answer into out.
func call(ctx context.Context, ep endpoint, method, path string, body []byte, out any) (int, error) {
	if _, err := os.Stat(ep.sock); err != nil {
		return 0, ep.absent(err)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", ep.sock)
	}}, Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(ctx, method, "http://fleet"+path, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("building the request to %s: %w", ep.sock, err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return 0, ep.absent(err)
	}
	defer func() { _ = res.Body.Close() }()
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(out); err != nil {
		return res.StatusCode, fmt.Errorf("decoding the answer of %s %s: %w", method, ep.sock, err)
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
	if _, err := call(ctx, fleetEndpoint(dir), http.MethodGet, "/v1/nodes", nil, &nodes); err == nil {
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
