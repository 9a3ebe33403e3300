package cdispec

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// Keeper keeps the spec in Dir in step with the node's GPUs: it writes the spec when the
// set of GPUs (their UUIDs and bus ids) or the driver version changes, and only then.
type Keeper struct {
	// Root is the host root the device nodes and libraries are found under.
	Root fs.FS
	// Dir is the CDI spec folder; DefaultDir when empty.
	Dir string
	// Log receives a line per spec written; discarded when nil.
	Log *slog.Logger
	// Simulated is set for simulated GPUs (the sim backend): the spec is SimulatedHost's,
	// device nodes backed by /dev/null, and nothing is discovered under Root.
	Simulated bool

	source  *Source
	written string // the key of the GPUs last written for
}

// Sync writes the spec for snap when its GPUs differ from the last spec written. It
// reports whether it wrote; on error the next Sync tries again.
func (k *Keeper) Sync(snap *gpu.Snapshot) (bool, error) {
	if k.source == nil {
		k.source = &Source{Root: k.Root, Simulated: k.Simulated}
	}
	s, key, err := k.source.Spec(snap)
	if err != nil {
		return false, err
	}
	if key == k.written {
		return false, nil
	}
	dir := k.Dir
	if dir == "" {
		dir = DefaultDir
	}
	path, err := Write(dir, s)
	if err != nil {
		return false, err
	}
	k.written = key
	if k.Log != nil {
		k.Log.Info("cdi spec written", "logger", "cdispec", "path", path, "gpus", len(k.source.gpus(snap)), "mounts", len(s.ContainerEdits.Mounts))
	}
	return true, nil
}

// Run syncs at once and then every interval until ctx ends. A failed sync is logged and
// retried; Run returns the first sync's error, so that a node that cannot have a spec at
// all is reported at start.
func (k *Keeper) Run(ctx context.Context, b gpu.Backend, interval time.Duration) error {
	sync := func() error {
		snap, err := b.Snapshot(ctx)
		if err != nil {
			return fmt.Errorf("cdi spec: read the GPUs: %w", err)
		}
		_, err = k.Sync(snap)
		return err
	}
	if err := sync(); err != nil {
		return err
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := sync(); err != nil && k.Log != nil {
				k.Log.Warn("cdi spec not updated; retrying", "logger", "cdispec", "err", err)
			}
		}
	}
}

func gpuKey(driver string, devs []gpu.Device) string {
	parts := []string{driver}
	for _, d := range devs {
		parts = append(parts, d.UUID+"@"+d.PCI.BusID)
	}
	slices.Sort(parts[1:])
	return strings.Join(parts, ";")
}
