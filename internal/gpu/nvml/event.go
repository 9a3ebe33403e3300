package nvml

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

// watchedEvents are the NVML event types Watch asks for: critical XID, single- and
// double-bit ECC, the driver's recovery action (R565 and later) and GPU unavailable. Each
// device is registered for the part of this mask that it supports.
const watchedEvents uint64 = gonvml.EventTypeXidCriticalError | gonvml.EventTypeSingleBitEccError |
	gonvml.EventTypeDoubleBitEccError | gonvml.EventTypeGpuRecoveryAction |
	gonvml.EventTypeGpuUnavailableError

// eventBits are the watched event types one by one, in the order a device that refuses the
// whole mask is registered for them.
var eventBits = []uint64{
	gonvml.EventTypeXidCriticalError, gonvml.EventTypeDoubleBitEccError,
	gonvml.EventTypeSingleBitEccError, gonvml.EventTypeGpuRecoveryAction,
	gonvml.EventTypeGpuUnavailableError,
}

const (
	// defaultWaitTimeout bounds one nvmlEventSetWait, and so how long a cancelled context or
	// Close waits for the watcher.
	defaultWaitTimeout = 500 * time.Millisecond
	// maxBackoff bounds the pause between retries when NVML keeps failing.
	maxBackoff = 5 * time.Second
	// eventBuffer is the capacity of the channel Watch returns.
	eventBuffer = 64
)

var _ gpu.EventSource = (*Backend)(nil)

// Watch implements gpu.EventSource. It registers every GPU for the watched event types it
// supports (a GPU that supports none is skipped with a log line) and delivers XID, ECC,
// recovery-action and GPU-unavailable events until ctx ends or the backend is closed; then
// it frees the NVML event set and closes the channel.
//
// A GPU that stops answering becomes one EventGPULost (an XID 79 event also gives one) and
// is dropped from the event set; the other GPUs stay watched. When every GPU is lost, or
// NVML cannot wait at all, the watcher stops calling NVML and the channel stays open,
// empty, until ctx ends. Wait failures are retried with a growing pause, never in a busy
// loop. Close waits at most one wait timeout (500 ms) for a watcher inside NVML.
//
// Watch fails when the backend is closed, when NVML cannot create an event set, or when no
// GPU can be registered; the error wraps gpu.ErrNotSupported when no GPU supports any of
// the watched event types (or the library lacks events).
func (b *Backend) Watch(ctx context.Context) (<-chan gpu.Event, error) {
	return b.watch(ctx, defaultWaitTimeout)
}

// watch is Watch with the wait timeout as a parameter (tests use a short one).
func (b *Backend) watch(ctx context.Context, timeout time.Duration) (<-chan gpu.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("nvml watch: %w", err)
	}
	w := &watcher{b: b, timeout: timeout, out: make(chan gpu.Event, eventBuffer), log: slog.Default()}
	var err error
	if !b.locked(func() { err = w.open() }) {
		return nil, errors.New("nvml watch: backend is closed")
	}
	if err != nil {
		return nil, err
	}
	go w.run(ctx)
	return w.out, nil
}

// locked runs fn while the library is held open; it reports false, without running fn,
// when the backend is closed.
func (b *Backend) locked(fn func()) bool {
	b.life.RLock()
	defer b.life.RUnlock()
	if b.closed {
		return false
	}
	fn()
	return true
}

// watched is one GPU of a watcher.
type watched struct {
	dev       gonvml.Device
	index     int
	uuid      string
	supported uint64 // what nvmlDeviceGetSupportedEventTypes says
	mask      uint64 // what is registered in the current event set
	lost      bool
	skipped   bool // not watched: supports none of the watched types, or refused them
}

// live reports whether the GPU is still to be watched.
func (d *watched) live() bool { return !d.lost && !d.skipped }

// open counts the GPUs, creates the event set and registers every GPU. GPUs found lost are
// queued as EventGPULost for run to deliver first.
func (w *watcher) open() error {
	count, err := get("nvmlDeviceGetCount", w.b.lib.DeviceGetCount)
	if err != nil {
		return fmt.Errorf("nvml watch: counting devices: %w", err)
	}
	if count <= 0 {
		return fmt.Errorf("nvml watch: %w: no GPU to watch", gpu.ErrNotSupported)
	}
	if err := w.create(); err != nil {
		return fmt.Errorf("nvml watch: %w", err)
	}
	var reasons []string
	var failure error // the first failure that is not "not supported"
	for i := range count {
		d, err := w.add(i)
		if err == nil {
			continue
		}
		reasons = append(reasons, fmt.Sprintf("GPU %d: %v", i, err))
		if failure == nil && !errors.Is(err, gpu.ErrNotSupported) {
			failure = fmt.Errorf("GPU %d: %w", i, err)
		}
		if d != nil {
			d.skipped = true
		}
		w.log.Info("nvml watch: GPU not watched", "gpu", i, "reason", err.Error())
	}
	if w.registered() > 0 || len(w.pending) > 0 {
		return nil
	}
	w.free()
	if failure != nil {
		return fmt.Errorf("nvml watch: no GPU could be registered for events: %w", failure)
	}
	return fmt.Errorf("nvml watch: %w: no GPU supports XID, ECC, recovery-action or unavailable events (%s)",
		gpu.ErrNotSupported, strings.Join(reasons, "; "))
}

// create makes a new, empty event set.
func (w *watcher) create() error {
	set, err := get("nvmlEventSetCreate", w.b.lib.EventSetCreate)
	if err == nil && set == nil {
		err = errors.New("nvmlEventSetCreate: no event set returned")
	}
	if err != nil {
		return err
	}
	w.set = set
	return nil
}

// add opens GPU i and registers it. It returns the GPU (nil when it could not be opened)
// and why it is not watched; a lost GPU is queued as an event and is not an error.
func (w *watcher) add(i int) (*watched, error) {
	dev, err := get("nvmlDeviceGetHandleByIndex", func() (gonvml.Device, gonvml.Return) {
		return w.b.lib.DeviceGetHandleByIndex(i)
	})
	if err == nil && dev == nil {
		err = errors.New("nvmlDeviceGetHandleByIndex: no handle returned")
	}
	if errors.Is(err, gpu.ErrGPULost) {
		d := &watched{index: i}
		w.devs = append(w.devs, d)
		w.markLost(d, err)
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	d := &watched{dev: dev, index: i}
	w.devs = append(w.devs, d)
	d.uuid, _ = get("nvmlDeviceGetUUID", dev.GetUUID) // identity only; "" when unreadable
	d.supported, err = get("nvmlDeviceGetSupportedEventTypes", dev.GetSupportedEventTypes)
	if errors.Is(err, gpu.ErrGPULost) {
		w.markLost(d, err)
		return d, nil
	}
	if err != nil {
		return d, err
	}
	if d.supported&watchedEvents == 0 {
		return d, fmt.Errorf("%w: supports none of the watched event types (supported mask %#x)",
			gpu.ErrNotSupported, d.supported)
	}
	err = w.register(d)
	if errors.Is(err, gpu.ErrGPULost) {
		w.markLost(d, err)
		return d, nil
	}
	return d, err
}

// register adds d to the current event set for the watched types it supports. A device
// that refuses the whole mask (NVML: "some of the requested event types" not supported) is
// registered type by type, keeping those it accepts.
func (w *watcher) register(d *watched) error {
	want := d.supported & watchedEvents
	reg := func(mask uint64) error {
		return guard("nvmlDeviceRegisterEvents", func() gonvml.Return { return d.dev.RegisterEvents(mask, w.set) })
	}
	err := reg(want)
	if err == nil {
		d.mask = want
		return nil
	}
	if !errors.Is(err, gpu.ErrNotSupported) {
		return err
	}
	d.mask = 0
	for _, bit := range eventBits {
		if want&bit == 0 {
			continue
		}
		e := reg(bit)
		if e == nil {
			d.mask |= bit
		} else if errors.Is(e, gpu.ErrGPULost) {
			return e
		}
	}
	if d.mask == 0 {
		return err
	}
	if d.mask != want {
		w.log.Info("nvml watch: GPU registered for part of the watched events",
			"gpu", d.index, "registered", fmt.Sprintf("%#x", d.mask), "supported", fmt.Sprintf("%#x", d.supported))
	}
	return nil
}

// registered counts the GPUs registered in the current event set.
func (w *watcher) registered() int {
	n := 0
	for _, d := range w.devs {
		if d.live() && d.mask != 0 {
			n++
		}
	}
	return n
}

// markLost marks d lost and queues its EventGPULost, once per GPU.
func (w *watcher) markLost(d *watched, why error) {
	if d.lost {
		return // reported already
	}
	d.lost, d.mask = true, 0
	w.pending = append(w.pending, gpu.Event{
		Time: w.b.now(), Kind: gpu.EventGPULost, Index: d.index, UUID: d.uuid,
		GPUInstance: -1, ComputeInstance: -1, Message: why.Error(),
	})
	w.log.Warn("nvml watch: GPU lost", "gpu", d.index, "uuid", d.uuid, "reason", why.Error())
}
