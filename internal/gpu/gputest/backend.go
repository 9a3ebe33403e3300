package gputest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
)

// backendChecks are the clauses of gpu.Backend.
var backendChecks = []check{
	{"the backend has a name and its snapshots carry it", func(t *testing.T, _ *suite, b gpu.Backend) {
		defer closeTwice(t, b)
		snap := snapshot(t, b)
		if b.Name() == "" {
			t.Error(`Name() is "": it names the backend's kind ("nvml", "sim")`)
		}
		if snap.Backend != b.Name() {
			t.Errorf("the snapshot says backend %q, Name() says %q", snap.Backend, b.Name())
		}
		if snap.Time.IsZero() {
			t.Error("the snapshot has no time")
		}
		if snap.Driver.Vendor == "" {
			t.Error("the snapshot's driver names no vendor")
		}
	}},
	{"a snapshot lists its devices in index order, each once", func(t *testing.T, _ *suite, b gpu.Backend) {
		defer closeTwice(t, b)
		snap := snapshot(t, b)
		for i, d := range snap.Devices {
			if d.Index < 0 {
				t.Errorf("device %d has a negative index %d", i, d.Index)
			}
			if i > 0 && d.Index <= snap.Devices[i-1].Index {
				t.Errorf("device %d has index %d after index %d: Devices are ordered by index, each once", i, d.Index, snap.Devices[i-1].Index)
			}
		}
	}},
	{"every device has a UUID of its own or says why it has none", func(t *testing.T, _ *suite, b gpu.Backend) {
		defer closeTwice(t, b)
		snap := snapshot(t, b)
		seen := map[string]int{}
		for _, d := range snap.Devices {
			if d.UUID == "" {
				if d.Err(gpu.FieldUUID) == nil && d.Err(gpu.FieldDevice) == nil {
					t.Errorf("GPU %d has no UUID and no error for %s or %s", d.Index, gpu.FieldUUID, gpu.FieldDevice)
				}
				continue
			}
			if other, dup := seen[d.UUID]; dup {
				t.Errorf("GPUs %d and %d have the same UUID %s", other, d.Index, d.UUID)
			}
			seen[d.UUID] = d.Index
		}
	}},
	{"a fact that cannot be read is a field error that wraps the port's sentinel", func(t *testing.T, _ *suite, b gpu.Backend) {
		defer closeTwice(t, b)
		snap := snapshot(t, b)
		checkFieldErrors(t, "snapshot", snap.Errors)
		for _, d := range snap.Devices {
			checkFieldErrors(t, fmt.Sprintf("GPU %d", d.Index), d.Errors)
			if e := d.Unreachable(); e != nil && !e.Lost && d.Err(gpu.FieldDevice) == nil {
				t.Errorf("GPU %d is unreachable for %q, neither a lost read nor a device that could not be opened", d.Index, e.Message)
			}
		}
	}},
	{"a cancelled context ends a snapshot with the context's error", func(t *testing.T, _ *suite, b gpu.Backend) {
		defer closeTwice(t, b)
		snap, err := b.Snapshot(cancelled())
		if err == nil {
			t.Fatalf("Snapshot with a cancelled context returned %d devices and no error", len(snap.Devices))
		}
		wantCanceled(t, "Snapshot", err)
	}},
	{"snapshots can be taken from several goroutines at once", func(t *testing.T, _ *suite, b gpu.Backend) {
		defer closeTwice(t, b)
		want := len(snapshot(t, b).Devices)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				snap, err := b.Snapshot(context.Background())
				switch {
				case err != nil:
					errs <- err
				case len(snap.Devices) != want:
					errs <- fmt.Errorf("%d devices, the first snapshot had %d", len(snap.Devices), want)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("concurrent Snapshot: %v", err)
		}
	}},
	{"a snapshot is its caller's: changing it changes no later snapshot", func(t *testing.T, _ *suite, b gpu.Backend) {
		defer closeTwice(t, b)
		first := snapshot(t, b)
		if len(first.Devices) == 0 {
			t.Skip("the backend has no devices")
		}
		name := first.Devices[0].Name
		first.Devices[0].Name = "changed by the caller"
		first.Devices[0].SetErr(gpu.FieldSerial, fmt.Errorf("changed by the caller: %w", gpu.ErrNotSupported))
		second := snapshot(t, b)
		if got := second.Devices[0].Name; got != name {
			t.Errorf("GPU 0's name was %q, the next snapshot says %q: the backend hands out shared state", name, got)
		}
		if e := second.Devices[0].Err(gpu.FieldSerial); e != nil && strings.HasPrefix(e.Message, "changed by the caller") {
			t.Error("an error set on one snapshot's device shows in the next snapshot: the backend hands out shared Errors maps")
		}
	}},
	{"Close can be called twice", func(t *testing.T, _ *suite, b gpu.Backend) {
		closeTwice(t, b)
	}},
}

// sameDevices reports how the devices of a telemetry reading differ from a snapshot's.
func sameDevices(snap *gpu.Snapshot, indexes []int, uuids []string) error {
	if len(indexes) != len(snap.Devices) {
		return fmt.Errorf("%d devices, the snapshot has %d", len(indexes), len(snap.Devices))
	}
	for i, d := range snap.Devices {
		if indexes[i] != d.Index || (uuids[i] != "" && d.UUID != "" && uuids[i] != d.UUID) {
			return fmt.Errorf("device %d is GPU %d (%s), the snapshot's is GPU %d (%s)", i, indexes[i], uuids[i], d.Index, d.UUID)
		}
	}
	return nil
}

// deviceOf finds a snapshot's device by index.
func deviceOf(snap *gpu.Snapshot, index int) (gpu.Device, bool) {
	for _, d := range snap.Devices {
		if d.Index == index {
			return d, true
		}
	}
	return gpu.Device{}, false
}
