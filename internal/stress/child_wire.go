package stress

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// The child protocol: the parent writes one request a line on the child's
// stdin and the child answers each with one response line on stdout, in
// order. Both are JSON. The child exits when stdin closes, and after a sticky
// CUDA error (its CUDA state is then useless; the parent starts another).

// childRequest asks a child to run one test on one GPU, or p2p on a pair.
type childRequest struct {
	Test         Test          `json:"test"`
	GPUs         []GPU         `json:"gpus"`
	Duration     time.Duration `json:"duration"`
	PCIeMinRatio float64       `json:"pcieMinRatio"`
}

// childResponse is a child's answer to one request.
type childResponse struct {
	Outcome Outcome    `json:"outcome"`
	Error   *wireError `json:"error,omitempty"`
}

// wireError carries an executor's error across the process boundary, keeping
// what judge looks at: the message, the sentinel it wraps and the CUDA error.
type wireError struct {
	Kind    string     `json:"kind"`
	Message string     `json:"message"`
	CUDA    *CUDAError `json:"cuda,omitempty"`
}

// wireKinds maps each sentinel judge distinguishes to its name on the wire.
var wireKinds = []struct {
	name string
	err  error
}{
	{"not-applicable", ErrNotApplicable},
	{"no-cuda", ErrNoCUDA},
	{"no-device", ErrNoDevice},
	{"silent-data-corruption", ErrSilentDataCorruption},
	{"bad-input", ErrBadInput},
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Kind: "error", Message: err.Error()}
	for _, k := range wireKinds {
		if errors.Is(err, k.err) {
			w.Kind = k.name
			break
		}
	}
	var cerr *CUDAError
	if errors.As(err, &cerr) {
		w.CUDA = cerr
	}
	return w
}

// remoteError is an error a child returned: its message as the child wrote it,
// wrapping the same sentinel and CUDA error.
type remoteError struct {
	msg  string
	errs []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.errs }

func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	e := &remoteError{msg: w.Message}
	for _, k := range wireKinds {
		if k.name == w.Kind {
			e.errs = append(e.errs, k.err)
		}
	}
	if w.CUDA != nil {
		e.errs = append(e.errs, w.CUDA)
	}
	return e
}

// ServeChild is the child's side of the protocol: it runs each request read
// from in with exec and writes the response to out, until in closes (nil) or
// a test fails with a sticky CUDA error (that error, after its response).
func ServeChild(ctx context.Context, in io.Reader, out io.Writer, exec Executor) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var req childRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("%w: child request %q: %w", ErrBadInput, sc.Text(), err)
		}
		o, err := serveOne(ctx, req, exec)
		if werr := enc.Encode(childResponse{Outcome: o, Error: toWire(err)}); werr != nil {
			return fmt.Errorf("writing the %s result: %w", req.Test, werr)
		}
		var cerr *CUDAError
		if errors.As(err, &cerr) && cerr.Sticky() {
			return fmt.Errorf("leaving after a sticky CUDA error: %w", err)
		}
	}
	return sc.Err()
}

func serveOne(ctx context.Context, req childRequest, exec Executor) (Outcome, error) {
	p := Plan{Tests: []Test{req.Test}, GPUs: req.GPUs, Duration: req.Duration, PCIeMinRatio: req.PCIeMinRatio}
	switch {
	case req.Test == TestP2P && len(req.GPUs) == 2:
		return exec.Pair(ctx, req.GPUs[0], req.GPUs[1], p)
	case req.Test != TestP2P && len(req.GPUs) == 1:
		return exec.Device(ctx, req.Test, req.GPUs[0], p)
	}
	return Outcome{}, fmt.Errorf("%w: child request for %s with %d GPUs", ErrBadInput, req.Test, len(req.GPUs))
}
