package gputest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// fake is a backend of two GPUs, with every optional interface, and one flaw at a time, to
// show that the suite finds it.
type fake struct {
	flaw   string
	mu     sync.Mutex
	closed int
	shared []gpu.Device
}

func (f *fake) Name() string { return "fake" }

func (f *fake) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed++
	if f.flaw == "close-once" && f.closed > 1 {
		return fmt.Errorf("already closed")
	}
	return nil
}

func (f *fake) Snapshot(ctx context.Context) (*gpu.Snapshot, error) {
	if err := ctx.Err(); err != nil && f.flaw != "ignores-context" {
		return nil, fmt.Errorf("fake snapshot: %w", err)
	}
	devs := []gpu.Device{{Index: 0, UUID: "GPU-0", Name: "fake"}, {Index: 1, UUID: "GPU-1", Name: "fake"}}
	switch f.flaw {
	case "out-of-order":
		devs[0], devs[1] = devs[1], devs[0]
	case "same-uuid":
		devs[1].UUID = devs[0].UUID
	case "no-uuid":
		devs[1].UUID = ""
	case "shared-state":
		f.mu.Lock()
		if f.shared == nil {
			f.shared = devs
		}
		devs = f.shared
		f.mu.Unlock()
	case "empty-error":
		devs[1].Errors = map[gpu.Field]gpu.FieldError{gpu.FieldPower: {}}
	}
	name := f.Name()
	if f.flaw == "wrong-name" {
		name = "other"
	}
	return &gpu.Snapshot{Backend: name, Time: time.Unix(1, 0), Driver: gpu.Driver{Vendor: "fake"}, Devices: devs}, nil
}

// Telemetry implements gpu.TelemetrySource: the snapshot's GPUs, or GPU 1 alone.
func (f *fake) Telemetry(ctx context.Context) (*gpu.Telemetry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fake telemetry: %w", err)
	}
	t := &gpu.Telemetry{Time: time.Unix(1, 0), Devices: []gpu.DeviceTelemetry{{Index: 0, UUID: "GPU-0"}, {Index: 1, UUID: "GPU-1"}}}
	if f.flaw == "telemetry-short" {
		t.Devices = t.Devices[1:]
	}
	return t, nil
}

// Processes implements gpu.ProcessLister: none on either GPU.
func (f *fake) Processes(ctx context.Context, uuid string) ([]gpu.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fake processes: %w", err)
	}
	if uuid != "GPU-0" && uuid != "GPU-1" && f.flaw != "any-uuid" {
		return nil, fmt.Errorf("fake processes: no GPU %s", uuid)
	}
	if f.flaw == "bad-process" {
		return []gpu.Process{{PID: 0, Kind: "compute"}}, nil
	}
	return nil, nil
}

// Watch implements gpu.EventSource: one XID event of GPU 1 (of GPU 7 with the flaw), then
// nothing until ctx ends.
func (f *fake) Watch(ctx context.Context) (<-chan gpu.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fake watch: %w", err)
	}
	ch := make(chan gpu.Event, 1)
	e := gpu.Event{Time: time.Unix(2, 0), Kind: gpu.EventXID, XID: 79, Index: 1, UUID: "GPU-1", GPUInstance: -1, ComputeInstance: -1}
	if f.flaw == "unknown-gpu-event" {
		e.Index, e.UUID = 7, "GPU-7"
	}
	ch <- e
	go func() { <-ctx.Done(); close(ch) }()
	return ch, nil
}

// TestTheSuiteFailsEachFlaw runs the suite in a child process on a fake backend with one
// flaw, and wants the clause about that flaw to fail; the fake without a flaw passes.
func TestTheSuiteFailsEachFlaw(t *testing.T) {
	if flaw, ok := os.LookupEnv("GPUTEST_FLAW"); ok {
		Conformance(t, func(*testing.T) gpu.Backend { return &fake{flaw: flaw} },
			WithEvents(func(*testing.T, gpu.Backend) int { return 1 }))
		return
	}
	cases := []struct {
		name, flaw, clause string
	}{
		{"a backend without a flaw passes", "", ""},
		{"devices out of index order fail the ordering clause", "out-of-order", "a snapshot lists its devices in index order, each once"},
		{"two GPUs with one UUID fail the UUID clause", "same-uuid", "every device has a UUID of its own or says why it has none"},
		{"a GPU without a UUID or an error fails the UUID clause", "no-uuid", "every device has a UUID of its own or says why it has none"},
		{"a field error without words fails the field-error clause", "empty-error", "a fact that cannot be read is a field error that wraps the port's sentinel"},
		{"a snapshot that ignores a cancelled context fails the context clause", "ignores-context", "a cancelled context ends a snapshot with the context's error"},
		{"a snapshot that shares the backend's state fails the ownership clause", "shared-state", "a snapshot is its caller's: changing it changes no later snapshot"},
		{"a second Close that fails fails the Close clause", "close-once", "Close can be called twice"},
		{"a snapshot naming another backend fails the name clause", "wrong-name", "the backend has a name and its snapshots carry it"},
		{"telemetry that leaves a GPU out fails the telemetry clause", "telemetry-short", "telemetry reads the snapshot's GPUs in its order, with per-value errors"},
		{"processes of a GPU that does not exist fail the unknown-GPU clause", "any-uuid", "the processes of a GPU that does not exist are an error"},
		{"a process without a PID fails the listing clause", "bad-process", "the processes of every GPU that answers can be listed"},
		{"an event of a GPU the snapshot lacks fails the event clause", "unknown-gpu-event", "a watch delivers well-formed events of the snapshot's GPUs and closes its channel when the context ends"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestTheSuiteFailsEachFlaw$", "-test.v")
			cmd.Env = append(os.Environ(), "GPUTEST_FLAW="+tc.flaw)
			out, err := cmd.CombinedOutput()
			if tc.clause == "" {
				if err != nil {
					t.Fatalf("the suite failed a backend without a flaw: %v\n%s", err, out)
				}
				return
			}
			if err == nil {
				t.Fatalf("the suite passed a backend whose flaw is %s:\n%s", tc.flaw, out)
			}
			if want := "--- FAIL: TestTheSuiteFailsEachFlaw/" + strings.ReplaceAll(tc.clause, " ", "_"); !strings.Contains(string(out), want) {
				t.Errorf("the clause %q did not fail:\n%s", tc.clause, out)
			}
		})
	}
}
