package nvml

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

// envWatchSeconds names the variable that sets how long TestWatchOnThisHost watches (default 3 s).
const envWatchSeconds = "GPUNODE_WATCH_SECONDS"

// TestWatchOnThisHost watches the real GPUs of this host: it logs each GPU's supported event
// mask and the part of it that Watch registers, then every event that arrives within
// GPUNODE_WATCH_SECONDS (default 3; a healthy GPU gives none), and fails when Watch fails or
// the channel does not close promptly after the context ends. Without the driver it skips.
func TestWatchOnThisHost(t *testing.T) {
	t.Setenv(EnvLibraryPath, "")
	seconds := 3.0
	if v := os.Getenv(envWatchSeconds); v != "" {
		s, err := strconv.ParseFloat(v, 64)
		if err != nil || s <= 0 {
			t.Fatalf("%s=%q: want a positive number of seconds", envWatchSeconds, v)
		}
		seconds = s
	}
	b, err := New()
	if err != nil {
		if errors.Is(err, gpu.ErrDriverNotFound) {
			t.Skipf("needs the NVIDIA driver: %v", err)
		}
		t.Fatalf("New: %v", err)
	}
	defer closeBackend(t, b)
	logMasks(t, b)

	watchFor := time.Duration(seconds * float64(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), watchFor)
	defer cancel()
	start := time.Now()
	ch, err := b.Watch(ctx)
	if err != nil {
		if errors.Is(err, gpu.ErrNotSupported) {
			t.Skipf("the driver has no events for these GPUs: %v", err)
		}
		t.Fatalf("Watch: %v", err)
	}
	t.Logf("watching for %v (set %s to change)", watchFor, envWatchSeconds)
	n := 0
	for e := range ch {
		n++
		t.Logf("event %d at +%v: %s", n, e.Time.Sub(start).Round(time.Millisecond), brief([]gpu.Event{e})[0])
	}
	lag := time.Since(start) - watchFor
	t.Logf("%d events in %v; the channel closed %v after the context ended", n, watchFor, lag.Round(time.Millisecond))
	if lag > 2*defaultWaitTimeout {
		t.Errorf("the channel closed %v after the context ended, want within %v", lag, 2*defaultWaitTimeout)
	}
}

// logMasks logs, per GPU, the supported event mask and the watched part of it.
func logMasks(t *testing.T, b *Backend) {
	t.Helper()
	b.locked(func() {
		count, err := get("nvmlDeviceGetCount", b.lib.DeviceGetCount)
		if err != nil {
			t.Errorf("counting GPUs: %v", err)
			return
		}
		for i := range count {
			dev, err := get("nvmlDeviceGetHandleByIndex", func() (gonvml.Device, gonvml.Return) { return b.lib.DeviceGetHandleByIndex(i) })
			if err != nil {
				t.Logf("GPU %d: %v", i, err)
				continue
			}
			uuid, _ := get("nvmlDeviceGetUUID", dev.GetUUID)
			mask, err := get("nvmlDeviceGetSupportedEventTypes", dev.GetSupportedEventTypes)
			if err != nil {
				t.Logf("GPU %d %s: supported event types: %v", i, uuid, err)
				continue
			}
			t.Logf("GPU %d %s: supported event mask %#x; watched %#x of %#x", i, uuid, mask, mask&watchedEvents, watchedEvents)
		}
	})
}
