package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
)

func TestTheDriverFileLoadsTheSimulatedDriver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "nvidia", "driver-version")
	b, err := Load("h100x8", WithDriverFile(path))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		write   func()
		version string
		errSays string
	}{
		{"an absent file is a driver that is not loaded", func() {}, "", "is absent"},
		{"an empty file is a driver that is not loaded", func() { write(t, path, "\n") }, "", "is empty"},
		{"the file's first line is the driver version", func() { write(t, path, "570.1.2\nanything\n") }, "570.1.2", ""},
		{"a new version in the file is the new driver", func() { write(t, path, " 580.95.05 ") }, "580.95.05", ""},
		{"a file removed again unloads the driver", func() { _ = os.Remove(path) }, "", "is absent"},
		{"text that is no version is an error naming the file", func() { write(t, path, "not a version") }, "", path},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.write()
			snap, err := b.Snapshot(ctx)
			_, telErr := b.Telemetry(ctx)
			if tc.errSays != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSays) || telErr == nil {
					t.Fatalf("snapshot error %v, telemetry error %v; want one containing %q", err, telErr, tc.errSays)
				}
				if strings.HasPrefix(tc.errSays, "is ") && !errors.Is(err, gpu.ErrDriverNotFound) {
					t.Errorf("%v does not wrap gpu.ErrDriverNotFound", err)
				}
				return
			}
			if err != nil || telErr != nil {
				t.Fatal(err, telErr)
			}
			if snap.Driver.Version != tc.version || snap.Driver.LibraryVersion != "13."+tc.version || snap.Driver.CUDAVersion == "" {
				t.Errorf("driver %+v, want version %s", snap.Driver, tc.version)
			}
		})
	}
}

func TestWithoutADriverFileTheScenarioDriverIsAlwaysLoaded(t *testing.T) {
	b, err := Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := b.Snapshot(context.Background())
	if err != nil || snap.Driver.Version != "580.95.05" || snap.Driver.LibraryVersion != "13.580.95.05" {
		t.Fatalf("%v %+v", err, snap.Driver)
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
