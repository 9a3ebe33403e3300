package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
)

// maxDriverFile bounds what is read of a driver version file.
const maxDriverFile = 256

// WithDriverFile makes the simulated driver "loaded" only while the file at path exists:
// its first line is the driver version the snapshots report (the scenario's other driver
// facts stay). While it is absent, Snapshot and Telemetry fail with an error that wraps
// gpu.ErrDriverNotFound, as NVML does on a host whose driver is not loaded. A stand-in
// driver container writes it to "load" a driver of its version.
func WithDriverFile(path string) Option { return func(o *options) { o.driverFile = path } }

// loadedDriver is the driver the snapshots report now: the scenario's, with the version
// from the driver file when there is one.
func (b *Backend) loadedDriver() (gpu.Driver, error) {
	d := b.driver
	if b.driverFile == "" {
		return d, nil
	}
	v, err := readDriverFile(b.driverFile)
	if err != nil {
		return gpu.Driver{}, err
	}
	d.Version = v
	if cuda, _, ok := strings.Cut(b.driver.LibraryVersion, "."); ok {
		d.LibraryVersion = cuda + "." + v // NVML's: the CUDA major, then the driver's
	}
	return d, nil
}

// readDriverFile reads a driver version file: absent or empty is "driver not loaded".
func readDriverFile(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: the simulated driver is not loaded (%s is absent)", gpu.ErrDriverNotFound, path)
	}
	if err != nil {
		return "", fmt.Errorf("simulated driver: %w", err)
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, maxDriverFile)
	n, _ := f.Read(buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	v := strings.TrimSpace(line)
	if v == "" {
		return "", fmt.Errorf("%w: the simulated driver is not loaded (%s is empty)", gpu.ErrDriverNotFound, path)
	}
	if len(v) > 64 || strings.ContainsAny(v, " \t") {
		return "", fmt.Errorf("simulated driver: %s: %q is not a driver version", path, v)
	}
	return v, nil
}
