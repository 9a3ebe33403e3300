package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tailSize is how much of a process's last output an error quotes.
const tailSize = 4 << 10

// process is a running etcd or kube-apiserver.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *tail
	done chan struct{} // closed when the process has exited
	err  error         // how it exited; read after done
	// reported is set once an error has said that the process exited, so that stop
	// does not say it again.
	reported bool
}

// startProcess runs path with args in its own process group (on Linux it dies with this
// process), its output going to log (may be nil) and to a tail kept for errors.
func startProcess(name, path string, args []string, log io.Writer) (*process, error) {
	p := &process{name: name, out: &tail{}, done: make(chan struct{})}
	var w io.Writer = p.out
	if log != nil {
		w = io.MultiWriter(log, p.out)
	}
	p.cmd = exec.Command(path, args...)
	p.cmd.Stdout, p.cmd.Stderr = w, w
	ownGroup(p.cmd)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s %s: %w", name, path, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited says how the process ended, with its last output, when it has ended.
func (p *process) exited() error {
	select {
	case <-p.done:
		how := p.err
		if how == nil {
			how = errors.New("exit status 0")
		}
		return fmt.Errorf("%s exited (%w); its last output:\n%s", p.name, how, p.out)
	default:
		return nil
	}
}

// waitReady calls ready every interval until it returns nil, failing when the process
// exits, ctx ends or timeout passes (then with ready's last error and the output).
func (p *process) waitReady(ctx context.Context, timeout time.Duration, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	const interval = 100 * time.Millisecond
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		last := ready(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			p.reported = true
			return p.exited()
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %s: %w (last check: %w); its last output:\n%s", p.name, timeout, ctx.Err(), last, p.out)
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM to the process's group, and SIGKILL after timeout. An exit the
// signal caused is no error; one before it is, unless an error has said so already.
func (p *process) stop(timeout time.Duration) error {
	if err := p.exited(); err != nil {
		if p.reported {
			return nil
		}
		p.reported = true
		return err
	}
	_ = signalGroup(p.cmd, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
	}
	_ = signalGroup(p.cmd, syscall.SIGKILL)
	select {
	case <-p.done:
		return fmt.Errorf("%s did not stop within %s of SIGTERM; killed", p.name, timeout)
	case <-time.After(timeout):
		return fmt.Errorf("%s (pid %d) did not exit within %s of SIGKILL", p.name, p.cmd.Process.Pid, timeout)
	}
}

// signalGroup sends sig to the process group of cmd's process.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("sending %s to process group %d: %w", sig, cmd.Process.Pid, err)
	}
	return nil
}

// hasFlag says whether `path --help` lists --flag (etcd prints its help on stdout and
// exits 0; a failure to run is "no").
func hasFlag(ctx context.Context, path, flag string) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, path, "--help").CombinedOutput()
	return bytes.Contains(out, []byte("--"+flag))
}

// tail keeps the last tailSize bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

// Write keeps the end of b.
func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - tailSize; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// String is the kept output, trimmed, or "(none)".
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return "(none)"
	}
	return s
}
