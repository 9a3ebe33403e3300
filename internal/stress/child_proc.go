package stress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// child is one running child process and the reader of its stdout.
type child struct {
	cmd    *exec.Cmd
	name   string // "GPU 0", "GPUs 0-1"
	stdin  io.WriteCloser
	lines  chan []byte // stdout lines; closed at EOF
	stderr *lastLine
	done   chan struct{} // closed when the process has been waited for
	werr   error         // cmd.Wait's error, set before done closes
}

// startChild starts cmd in its own process group.
func startChild(cmd *exec.Cmd, key string) (*child, error) {
	c := &child{cmd: cmd, name: "GPU " + key, lines: make(chan []byte, 16), stderr: &lastLine{}, done: make(chan struct{})}
	if strings.Contains(key, "-") {
		c.name = "GPUs " + key
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: the child for %s: %w", ErrChildFailed, c.name, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: the child for %s: %w", ErrChildFailed, c.name, err)
	}
	cmd.Stderr = c.stderr
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: starting %s for %s: %w", ErrChildFailed, cmd.Path, c.name, err)
	}
	c.stdin = in
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			c.lines <- bytes.Clone(sc.Bytes())
		}
		close(c.lines)
		c.werr = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// request sends req and waits for its response, the child's end or ctx. keep
// is false when the child must not run another test: it died, broke the
// protocol, was killed for ctx, or hit a sticky CUDA error.
func (c *child) request(ctx context.Context, req childRequest) (Outcome, bool, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return Outcome{}, true, fmt.Errorf("%w: encoding the %s request: %w", ErrBadInput, req.Test, err)
	}
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		return Outcome{}, false, c.died(fmt.Sprintf("could not be sent the %s test (%v)", req.Test, err))
	}
	select {
	case line, ok := <-c.lines:
		if !ok {
			return Outcome{}, false, c.died(fmt.Sprintf("ended during the %s test", req.Test))
		}
		var resp childResponse
		if err := json.Unmarshal(line, &resp); err != nil {
			killGroup(c.cmd)
			return Outcome{}, false, fmt.Errorf("%w: the child for %s (pid %d) printed %q, not a result: %w",
				ErrChildFailed, c.name, c.cmd.Process.Pid, clip(string(line), 200), err)
		}
		err := resp.Error.err()
		var cerr *CUDAError
		return resp.Outcome, !errors.As(err, &cerr) || !cerr.Sticky(), err
	case <-ctx.Done():
		killGroup(c.cmd)
		return Outcome{}, false, fmt.Errorf("%w: the child for %s (pid %d) was killed: %w", ErrChildFailed, c.name, c.cmd.Process.Pid, ctx.Err())
	}
}

// died waits a moment for the exit status and says how the child ended.
func (c *child) died(what string) error {
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		killGroup(c.cmd)
		<-c.done
	}
	why := "exited"
	if c.werr != nil {
		why = c.werr.Error() // "signal: segmentation fault", "exit status 2"
	}
	msg := fmt.Sprintf("%s: the child for %s (pid %d) %s: %s", ErrChildFailed, c.name, c.cmd.Process.Pid, what, why)
	if l := c.stderr.String(); l != "" {
		msg += "; last stderr line: " + clip(l, 300)
	}
	return &remoteError{msg: msg, errs: []error{ErrChildFailed}}
}

// stop closes stdin and waits for the exit, killing the group after a second;
// it reports whether the process exited within wait.
func (c *child) stop(wait time.Duration) bool {
	_ = c.stdin.Close()
	select {
	case <-c.done:
		return true
	case <-time.After(time.Second):
	}
	killGroup(c.cmd)
	select {
	case <-c.done:
		return true
	case <-time.After(wait):
		return false
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// lastLine keeps the last non-empty line written to it (a child's stderr).
type lastLine struct {
	mu   sync.Mutex
	part []byte
	last string
}

func (l *lastLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		if s := strings.TrimSpace(string(l.part[:i])); s != "" {
			l.last = s
		}
		l.part = l.part[i+1:]
	}
	if len(l.part) > 4096 {
		l.part = l.part[len(l.part)-4096:]
	}
	return len(p), nil
}

func (l *lastLine) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := strings.TrimSpace(string(l.part)); s != "" {
		return s
	}
	return l.last
}
