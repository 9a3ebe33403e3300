package evidence

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/kmsg"
	"github.com/gpunode/gpunode/internal/podresources"
)

// Source names, the keys of Contents.Errors.
const (
	SourceGPU      = "gpu"
	SourceKernel   = "kernel"
	SourceBootID   = "bootId"
	SourceRelease  = "kernelRelease"
	SourceHostname = "hostname"
)

// PodSource says which containers hold a GPU (podresources.Cache implements it).
type PodSource interface {
	PodsFor(uuid string) []podresources.Pod
}

// Collector gathers a bundle's Contents from the node's sources. Every field but Node is
// optional: a source not configured is not collected, and one that fails or does not
// answer within Timeout is recorded in Contents.Errors while the others are still taken.
type Collector struct {
	// Node are the facts known in advance (node name, agent version); the rest is read.
	Node NodeFacts
	// Root is the host root the boot id, kernel release and hostname are read under.
	Root fs.FS
	// Backend takes the snapshot at capture.
	Backend gpu.Backend
	// Kernel supplies the kernel-log window.
	Kernel KernelSource
	// Before is how far before the event the kernel-log window starts (default 10 min);
	// it ends at capture, or After past the event if that is later.
	Before, After time.Duration
	// Findings and Health read the health monitor.
	Findings func() []health.Finding
	Health   func() *HealthState
	Pods     PodSource
	// Timeout bounds each source (default 10 s): a lost GPU can make the management
	// library block, and evidence must not delay recovery without end.
	Timeout time.Duration
	// Clock gives the created time; nil means time.Now.
	Clock func() time.Time
}

// Collect gathers the Contents for trigger. earlier are snapshots taken before the event
// (e.g. the monitor's last poll); they follow the snapshot taken now.
func (c Collector) Collect(ctx context.Context, trigger health.Finding, earlier ...gpu.Snapshot) Contents {
	now := time.Now
	if c.Clock != nil {
		now = c.Clock
	}
	out := Contents{Created: now().UTC(), Node: c.Node, Trigger: trigger, Errors: map[string]string{}}
	fail := func(source string, err error) { out.Errors[source] = err.Error() }
	c.hostFacts(&out, fail)
	if c.Backend != nil {
		snap, err := within(ctx, c.timeout(), func(ctx context.Context) (*gpu.Snapshot, error) { return c.Backend.Snapshot(ctx) })
		switch {
		case err != nil:
			fail(SourceGPU, fmt.Errorf("%s snapshot: %w", c.Backend.Name(), err))
		case snap != nil:
			out.Snapshots = append(out.Snapshots, *snap)
			out.Node.DriverVersion, out.Node.CUDAVersion = snap.Driver.Version, snap.Driver.CUDAVersion
			out.Node.Backend = snap.Backend
		}
	}
	out.Snapshots = append(out.Snapshots, earlier...)
	out.Window = c.window(trigger, out.Created)
	if c.Kernel != nil {
		recs, err := within(ctx, c.timeout(), func(ctx context.Context) ([]KernelRecord, error) { return c.Kernel.Records(ctx, out.Window) })
		if err != nil {
			fail(SourceKernel, err)
		}
		out.Kernel = recs
	}
	if c.Findings != nil {
		out.Findings = c.Findings()
	}
	if c.Health != nil {
		out.Health = c.Health()
	}
	if c.Pods != nil {
		for _, g := range out.AffectedGPUs() {
			for _, p := range c.Pods.PodsFor(g) {
				out.Pods = append(out.Pods, PodOnGPU{GPU: g, Namespace: p.Namespace, Name: p.Name, Container: p.Container})
			}
		}
	}
	if len(out.Errors) == 0 {
		out.Errors = nil
	}
	return out
}

// window spans Before ahead of the event to the capture (or After past the event).
func (c Collector) window(trigger health.Finding, now time.Time) Window {
	at := trigger.FirstSeen
	if at.IsZero() || at.After(now) {
		at = now
	}
	before := c.Before
	if before <= 0 {
		before = 10 * time.Minute
	}
	return Window{At: at.UTC(), Before: before, After: max(c.After, now.Sub(at))}
}

func (c Collector) timeout() time.Duration {
	if c.Timeout <= 0 {
		return 10 * time.Second
	}
	return c.Timeout
}

// hostFacts reads the boot id, kernel release and hostname under Root.
func (c Collector) hostFacts(out *Contents, fail func(string, error)) {
	if c.Root == nil {
		return
	}
	if id, err := kmsg.ReadBootID(c.Root); err != nil {
		fail(SourceBootID, err)
	} else {
		out.Node.BootID = id
	}
	if v, err := readLine(c.Root, "proc/sys/kernel/osrelease"); err != nil {
		fail(SourceRelease, err)
	} else {
		out.Node.Kernel = v
	}
	if v, err := hostname(c.Root); err != nil {
		fail(SourceHostname, err)
	} else {
		out.Node.Hostname = v
	}
}

// hostnameFiles are where the node's hostname is read under the root, in order. The node's
// /etc/hostname comes first: /proc/sys/kernel/hostname is the hostname of the reader's UTS
// namespace, so in a pod without hostNetwork it is the pod's name, even read through the
// node's procfs at /host/proc.
var hostnameFiles = []string{"etc/hostname", "proc/sys/kernel/hostname"}

// hostname is the first line of the first of hostnameFiles that has one.
func hostname(root fs.FS) (string, error) {
	var errs []string
	for _, name := range hostnameFiles {
		v, err := readLine(root, name)
		v, _, _ = strings.Cut(v, "\n")
		if err == nil && v != "" {
			return strings.TrimSpace(v), nil
		}
		if err == nil {
			err = fmt.Errorf("/%s: empty", name)
		}
		errs = append(errs, err.Error())
	}
	return "", errors.New(strings.Join(errs, "; "))
}

func readLine(root fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return "", fmt.Errorf("/%s: %w", name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// errTimeout is returned by within when fn does not return in time.
var errTimeout = errors.New("did not answer in time")

// within runs fn with a deadline and returns when fn returns or the deadline passes,
// whichever is first. fn keeps running after a timeout (a call blocked in a driver cannot
// be interrupted); its result is then discarded.
func within[T any](ctx context.Context, d time.Duration, fn func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer cancel()
		v, err := fn(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("%w (%s): %w", errTimeout, d, ctx.Err())
	}
}
