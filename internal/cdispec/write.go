package cdispec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpunode/gpunode/internal/atomicfile"
)

// DefaultDir is where the runtime reads dynamic (generated) specs.
const DefaultDir = "/var/run/cdi"

// ownerPrefix marks the spec files gpunode writes; only those are ever removed.
const ownerPrefix = "gpunode-"

// FileName is the name of the spec file for a spec's kind: "gpunode-nvidia.com-gpu.json".
func FileName(s *specs.Spec) (string, error) {
	name, err := cdiapi.GenerateNameForSpec(s)
	if err != nil {
		return "", fmt.Errorf("cdi spec file name: %w", err)
	}
	return ownerPrefix + name + ".json", nil
}

// Write writes s into dir atomically (a reader sees the old spec or the new one), reads it
// back through the CDI library (cdi.ReadSpec, the runtime's own validation), and removes
// the other gpunode-owned spec files in dir (a spec from an earlier kind or layout). It
// returns the file's path.
func Write(dir string, s *specs.Spec) (string, error) {
	name, err := FileName(s)
	if err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return "", fmt.Errorf("cdi spec: encode %s: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cdi spec: create %s: %w", dir, err)
	}
	path := filepath.Join(dir, name)
	if err := atomicfile.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("cdi spec: %w", err)
	}
	if _, err := cdiapi.ReadSpec(path, 0); err != nil {
		return path, fmt.Errorf("cdi spec: %s written but the CDI library refuses it: %w", path, err)
	}
	return path, RemoveStale(dir, name)
}

// RemoveStale removes the gpunode-owned spec files in dir other than keep ("" removes them
// all). Files of other owners, and the DRA claims' specs (WriteClaim), are never touched.
func RemoveStale(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cdi spec: list %s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		n := e.Name()
		spec := strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".yaml")
		if n == keep || !strings.HasPrefix(n, ownerPrefix) || strings.HasPrefix(n, claimPrefix) || e.IsDir() || !spec {
			continue
		}
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("cdi spec: remove stale %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}
