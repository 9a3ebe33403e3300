package nvml

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

// rebuildAfter is how many Wait failures in a row make the watcher recreate its event set.
const rebuildAfter = 3

// noInstance is NVML's GPU or compute instance id of an event that no MIG instance owns.
const noInstance = 0xFFFFFFFF

// watcher is one Watch: its event set and its GPUs. After open, only its goroutine uses it,
// and every NVML call it makes runs under Backend.locked.
type watcher struct {
	b       *Backend
	timeout time.Duration
	out     chan gpu.Event
	log     *slog.Logger

	set     gonvml.EventSet // nil when freed or not recreated yet
	devs    []*watched
	pending []gpu.Event // events to deliver before the next wait
	done    bool        // NVML cannot wait at all: stop calling it
}

// run delivers events until ctx ends or the backend is closed, then frees the event set
// (unless the backend is closed: nvmlShutdown has released it) and closes the channel.
func (w *watcher) run(ctx context.Context) {
	defer close(w.out)
	defer w.b.locked(w.free)
	failures := 0
	for ctx.Err() == nil {
		if !w.flush(ctx) {
			return
		}
		if w.done || w.live() == 0 {
			// Nothing left that NVML could report: stop calling it, stay open until ctx ends.
			w.b.locked(w.free)
			<-ctx.Done()
			return
		}
		if w.set == nil {
			if !pause(ctx, backoff(w.timeout, failures)) || !w.b.locked(w.rebuild) {
				return
			}
			if w.set == nil {
				failures++
			}
			continue
		}
		var data gonvml.EventData
		var err error
		start := time.Now()
		if !w.b.locked(func() { data, err = w.wait() }) {
			return
		}
		switch {
		case err == nil:
			failures = 0
			if w.translate(data) && !w.b.locked(w.rebuild) {
				return
			}
		case returnIs(err, gonvml.ERROR_TIMEOUT):
			failures = 0
			// A library that returns before its timeout must not make this loop spin.
			if took := time.Since(start); took < w.timeout/2 && !pause(ctx, w.timeout-took) {
				return
			}
		case errors.Is(err, gpu.ErrGPULost):
			before := len(w.pending)
			if !w.b.locked(func() { w.findLost(data.Device, err); w.rebuild() }) {
				return
			}
			if len(w.pending) == before { // lost, but no GPU says so: do not retry at once
				failures++
				w.failed(err, failures)
				if !pause(ctx, backoff(w.timeout, failures)) {
					return
				}
			}
		case errors.Is(err, gpu.ErrNotSupported):
			w.log.Warn("nvml watch: NVML cannot wait for events; no more events will be reported", "err", err.Error())
			w.done = true
		default:
			failures++
			w.failed(err, failures)
			if !pause(ctx, backoff(w.timeout, failures)) {
				return
			}
			if failures%rebuildAfter == 0 && !w.b.locked(w.rebuild) {
				return
			}
		}
	}
}

// wait runs one nvmlEventSetWait.
func (w *watcher) wait() (gonvml.EventData, error) {
	ms := max(uint32(w.timeout/time.Millisecond), 1)
	var data gonvml.EventData
	err := guard("nvmlEventSetWait", func() (ret gonvml.Return) {
		data, ret = w.set.Wait(ms)
		return ret
	})
	return data, err
}

// translate queues the gpu.Event of one NVML event and reports whether the event set must
// be rebuilt (an XID 79 lost its GPU).
func (w *watcher) translate(data gonvml.EventData) (rebuild bool) {
	d := w.find(data.Device)
	e := gpu.Event{
		Time: w.b.now(), Index: -1, Data: data.EventData,
		GPUInstance: instanceID(data.GpuInstanceId), ComputeInstance: instanceID(data.ComputeInstanceId),
	}
	if d != nil {
		e.Index, e.UUID = d.index, d.uuid
	}
	switch data.EventType {
	case gonvml.EventTypeXidCriticalError:
		e.Kind, e.XID = gpu.EventXID, int(data.EventData)
	case gonvml.EventTypeSingleBitEccError:
		e.Kind = gpu.EventECCSingleBit
	case gonvml.EventTypeDoubleBitEccError:
		e.Kind = gpu.EventECCDoubleBit
	case gonvml.EventTypeGpuRecoveryAction:
		e.Kind, e.RecoveryAction = gpu.EventRecoveryAction, recoveryAction(data.EventData)
	case gonvml.EventTypeGpuUnavailableError:
		e.Kind = gpu.EventGPUUnavailable
	default:
		w.log.Debug("nvml watch: event type not watched", "type", fmt.Sprintf("%#x", data.EventType), "gpu", e.Index)
		return false
	}
	w.pending = append(w.pending, e)
	if e.Kind == gpu.EventXID && e.XID == 79 && d != nil && !d.lost {
		w.markLost(d, errors.New("xid 79: GPU has fallen off the bus"))
		return true
	}
	return false
}

// findLost marks lost the GPU that nvmlEventSetWait named, or, when it named none that is
// still watched, every GPU that a cheap call finds lost.
func (w *watcher) findLost(dev gonvml.Device, why error) {
	if d := w.find(dev); d != nil && d.live() {
		w.markLost(d, why)
		return
	}
	for _, d := range w.devs {
		if !d.live() {
			continue
		}
		if _, err := get("nvmlDeviceGetMemoryInfo", d.dev.GetMemoryInfo); errors.Is(err, gpu.ErrGPULost) {
			w.markLost(d, err)
		}
	}
}

// rebuild replaces the event set by a new one with the GPUs still watched. A GPU that
// answers lost is reported; one that refuses registration is no longer watched.
func (w *watcher) rebuild() {
	w.free()
	if w.live() == 0 {
		return
	}
	if err := w.create(); err != nil {
		w.log.Warn("nvml watch: cannot recreate the event set; retrying", "err", err.Error())
		return
	}
	for _, d := range w.devs {
		if !d.live() {
			continue
		}
		switch err := w.register(d); {
		case errors.Is(err, gpu.ErrGPULost):
			w.markLost(d, err)
		case err != nil:
			d.skipped, d.mask = true, 0
			w.log.Warn("nvml watch: GPU no longer watched", "gpu", d.index, "err", err.Error())
		}
	}
	if w.registered() == 0 {
		w.free()
	}
}

// free releases the event set, if any. It must run under Backend.locked.
func (w *watcher) free() {
	if w.set == nil {
		return
	}
	if err := guard("nvmlEventSetFree", w.set.Free); err != nil {
		w.log.Debug("nvml watch: freeing the event set", "err", err.Error())
	}
	w.set = nil
	for _, d := range w.devs {
		d.mask = 0
	}
}

// find returns the watched GPU with handle dev, nil when none.
func (w *watcher) find(dev gonvml.Device) *watched {
	if dev == nil {
		return nil
	}
	for _, d := range w.devs {
		if d.dev != nil && sameDevice(d.dev, dev) {
			return d
		}
	}
	return nil
}

// sameDevice compares two handles; a handle type that cannot be compared is never equal.
func sameDevice(a, b gonvml.Device) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// live counts the GPUs still to be watched.
func (w *watcher) live() int {
	n := 0
	for _, d := range w.devs {
		if d.live() {
			n++
		}
	}
	return n
}

// flush delivers the pending events; false when ctx ended first.
func (w *watcher) flush(ctx context.Context) bool {
	for len(w.pending) > 0 {
		select {
		case w.out <- w.pending[0]:
			w.pending = w.pending[1:]
		case <-ctx.Done():
			return false
		}
	}
	w.pending = nil
	return true
}

// failed logs a failure streak: its first failure, then every tenth.
func (w *watcher) failed(err error, n int) {
	if n == 1 || n%10 == 0 {
		w.log.Warn("nvml watch: waiting for events failed; retrying", "failures", n, "err", err.Error())
	}
}

// instanceID is a MIG instance id, -1 for NVML's "none".
func instanceID(v uint32) int {
	if v == noInstance {
		return -1
	}
	return int(v)
}

// backoff is the pause after n failures in a row: base, doubling, at most maxBackoff.
func backoff(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// pause sleeps for d; false when ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
