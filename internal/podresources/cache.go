package podresources

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DefaultRefresh is how often a Cache asks the kubelet when Options.Refresh is zero.
const DefaultRefresh = 10 * time.Second

// ErrNoSocket is wrapped by a refresh error when the socket does not exist: the kubelet
// is not running, or this is not a Kubernetes node, or the socket is not mounted.
var ErrNoSocket = errors.New("kubelet pod-resources socket absent")

// Options configure a Cache. Every field has a default.
type Options struct {
	// Socket is the kubelet's pod-resources socket (DefaultSocket).
	Socket string
	// Refresh is the interval between refreshes (DefaultRefresh), and the most a failing
	// refresh waits before the next attempt.
	Refresh time.Duration
	// Timeout bounds one call to the kubelet (DefaultTimeout).
	Timeout time.Duration
	// KeepStale is how long after the last successful refresh the map it built is still
	// served while refreshes fail (a kubelet restart keeps the pods and their devices):
	// 3×Refresh when zero; negative drops the map at the first failure.
	KeepStale time.Duration
	// ResourceNames are the resources whose devices are attributed
	// (DefaultResourceNames); a name ending in "*" matches by prefix.
	ResourceNames []string
	// ParentGPU, when set, names the GPU that owns a device ID (after the replica suffix
	// is stripped): a MIG device's UUID maps to its parent GPU's UUID, and it may also
	// map a device plugin's index IDs ("0") to UUIDs. Devices it maps are filed under
	// both IDs; ok false or a nil ParentGPU file a device under its own ID only.
	ParentGPU func(deviceID string) (gpuUUID string, ok bool)
	// DRADevice, when set, attributes the devices of the containers' DRA claims (the
	// kubelet lists them as dynamic resources) by the ID it gives them; ResourceNames
	// does not apply to them.
	DRADevice DRADevice
	// Log receives one line per change of availability (slog.Default()).
	Log *slog.Logger
	// Clock tells the time for Stats and KeepStale (time.Now).
	Clock func() time.Time
}

// Stats describe the last refresh, for /healthz or a metric.
type Stats struct {
	// LastAttempt and LastSuccess are when the last refresh and the last successful one
	// ran (zero: never).
	LastAttempt time.Time
	LastSuccess time.Time
	// Err is the last refresh's error, nil when it succeeded.
	Err error
	// Failures counts consecutive failed refreshes.
	Failures int
	// Pods counts the pods holding a matched device, Devices the IDs PodsFor answers
	// for (a MIG device and its parent GPU count twice), in the map now served.
	Pods    int
	Devices int
	// Stale is true while the map served is the last good one, kept across failures.
	Stale bool
}

// availability is what was last logged.
type availability int

const (
	availUnknown availability = iota
	availUp
	availAbsent // ErrNoSocket
	availFailing
)

// snapshot is what readers see; replaced whole, never modified.
type snapshot struct {
	byDevice map[string][]Pod
	stats    Stats
}

// Cache maps GPU UUIDs to the pods holding them. Run refreshes it in the background;
// PodsFor and Stats only read the last snapshot and never block on the kubelet.
type Cache struct {
	opt   Options
	match matcher
	snap  atomic.Pointer[snapshot]

	mu     sync.Mutex // serializes refreshes; guards the fields below
	client *Client
	avail  availability
}

// New returns a Cache with no attribution until its first refresh.
func New(opt Options) *Cache {
	if opt.Socket == "" {
		opt.Socket = DefaultSocket
	}
	if opt.Refresh <= 0 {
		opt.Refresh = DefaultRefresh
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if opt.KeepStale == 0 {
		opt.KeepStale = 3 * opt.Refresh
	}
	if len(opt.ResourceNames) == 0 {
		opt.ResourceNames = DefaultResourceNames()
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	opt.Log = opt.Log.With("logger", "podresources")
	if opt.Clock == nil {
		opt.Clock = time.Now
	}
	c := &Cache{opt: opt, match: newMatcher(opt.ResourceNames)}
	c.snap.Store(&snapshot{})
	return c
}

// PodsFor returns the containers holding the device with this ID (a GPU UUID, or a MIG
// device's UUID), sorted by namespace, name and container; nil when none or unknown.
// The slice is shared with other callers: read it, do not modify it.
func (c *Cache) PodsFor(uuid string) []Pod {
	return c.snap.Load().byDevice[uuid]
}

// Stats describe the last refresh.
func (c *Cache) Stats() Stats {
	return c.snap.Load().stats
}

// Run refreshes until ctx is done: every Options.Refresh after a success, and after a
// failure with a backoff that starts at a second (or Refresh, if shorter) and doubles up
// to Refresh. It closes the connection when it returns.
func (c *Cache) Run(ctx context.Context) {
	defer func() { _ = c.Close() }() // nothing to do about a failed close at shutdown
	base := min(time.Second, c.opt.Refresh)
	for {
		wait := c.opt.Refresh
		if err := c.Refresh(ctx); err != nil {
			wait = backoff(c.Stats().Failures, base, c.opt.Refresh)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Refresh asks the kubelet once and publishes the new map, or on failure keeps the last
// good map until Options.KeepStale has passed since it was built. It returns the
// failure; one canceled by ctx changes nothing.
func (c *Cache) Refresh(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	pods, err := c.list(ctx)
	if err != nil && ctx.Err() != nil {
		return err // shutting down: not the kubelet's failure
	}
	now := c.opt.Clock()
	prev := c.snap.Load()
	next := &snapshot{stats: Stats{LastAttempt: now, LastSuccess: prev.stats.LastSuccess}}
	if err == nil {
		byDevice, n := index(pods, c.match, c.opt.ParentGPU, c.opt.DRADevice)
		next.byDevice = byDevice
		next.stats.LastSuccess = now
		next.stats.Pods, next.stats.Devices = n, len(byDevice)
	} else {
		next.stats.Err = err
		next.stats.Failures = prev.stats.Failures + 1
		if c.opt.KeepStale > 0 && !prev.stats.LastSuccess.IsZero() && now.Sub(prev.stats.LastSuccess) <= c.opt.KeepStale {
			next.byDevice = prev.byDevice
			next.stats.Pods, next.stats.Devices = prev.stats.Pods, prev.stats.Devices
			next.stats.Stale = len(prev.byDevice) > 0
		}
	}
	c.snap.Store(next)
	c.note(ctx, err)
	return err
}

// Close releases the connection to the kubelet; a later Refresh reconnects.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropClient()
}

// list calls the kubelet, connecting first when needed. After a failure the connection
// is dropped so that the next attempt dials afresh instead of waiting out gRPC's own
// reconnect backoff (up to two minutes) when the kubelet comes back.
func (c *Cache) list(ctx context.Context) ([]*podresourcesv1.PodResources, error) {
	if _, err := os.Stat(c.opt.Socket); err != nil {
		_ = c.dropClient()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNoSocket, c.opt.Socket)
		}
		return nil, fmt.Errorf("pod-resources socket: %w", err) // err names the path
	}
	if c.client == nil {
		cl, err := NewClient(c.opt.Socket, c.opt.Timeout)
		if err != nil {
			return nil, err
		}
		c.client = cl
	}
	pods, err := c.client.List(ctx)
	if err != nil {
		_ = c.dropClient()
		return nil, err
	}
	return pods, nil
}

func (c *Cache) dropClient() error {
	if c.client == nil {
		return nil
	}
	err := c.client.Close()
	c.client = nil
	return err
}

// note logs a change of availability: one line when attribution starts, stops or comes
// back, or its failure changes kind (socket absent, kubelet failing); never one per
// refresh.
func (c *Cache) note(ctx context.Context, err error) {
	now := availUp
	switch {
	case errors.Is(err, ErrNoSocket):
		now = availAbsent
	case err != nil:
		now = availFailing
	}
	if now == c.avail {
		return
	}
	was := c.avail
	c.avail = now
	log, sock := c.opt.Log, slog.String("socket", c.opt.Socket)
	keep := slog.Duration("keep_stale", max(c.opt.KeepStale, 0))
	switch {
	case now == availUp && was == availUnknown:
		log.InfoContext(ctx, "pod attribution active", sock)
	case now == availUp:
		log.InfoContext(ctx, "pod attribution restored", sock)
	case now == availAbsent:
		log.InfoContext(ctx, "kubelet pod-resources socket absent: pod attribution paused", sock, keep)
	default:
		log.WarnContext(ctx, "kubelet pod-resources unavailable: pod attribution paused", sock, keep, slog.Any("err", err))
	}
}
