package evidence

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	"github.com/gpunode/gpunode/internal/health"
)

// Schema is the manifest's schema version. A reader refuses any other.
const Schema = "gpunode.dev/evidence/v1"

// ManifestName is the archive's first file.
const ManifestName = "manifest.json"

// maxManifestBytes bounds what ReadManifest reads: a manifest lists a handful of files and
// one finding, a few KiB.
const maxManifestBytes = 1 << 20

// ErrBadManifest is wrapped by every manifest validation failure.
var ErrBadManifest = errors.New("bad evidence manifest")

// Manifest describes a bundle: what it is for and, for every other file, its size and
// sha256 and what the caps dropped.
type Manifest struct {
	Schema  string         `json:"schema"`
	Node    string         `json:"node"`
	Created time.Time      `json:"created"`
	Trigger health.Finding `json:"trigger"`
	// GPUs are the affected GPUs' UUIDs.
	GPUs   []string    `json:"gpus"`
	Window Window      `json:"window"`
	Files  []FileEntry `json:"files"`
	// TotalCap is the cap on the sum of the files' sizes.
	TotalCap int64 `json:"totalCap"`
	// Truncated is true when any file dropped items.
	Truncated bool `json:"truncated"`
	// Failed names the sources that could not be collected (errors.json says why).
	Failed []string `json:"failed,omitempty"`
}

// FileEntry is one file of the bundle.
type FileEntry struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Items is how many items (records, findings, snapshots, pods) the file holds; Dropped
	// how many the caps removed, in the order of importance docs/evidence.md gives.
	Items   int `json:"items"`
	Dropped int `json:"dropped,omitempty"`
	// Cap is the byte budget the file was built to: its own cap, or less when the total
	// cap left less.
	Cap int64 `json:"cap"`
	// Note says what was dropped and why.
	Note string `json:"note,omitempty"`
}

// File returns the entry named name.
func (m Manifest) File(name string) (FileEntry, bool) {
	for _, f := range m.Files {
		if f.Name == name {
			return f, true
		}
	}
	return FileEntry{}, false
}

// Bytes is the sum of the files' sizes (the manifest not counted).
func (m Manifest) Bytes() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Bytes
	}
	return n
}

// encodeManifest renders m as indented JSON with a final newline.
func encodeManifest(m Manifest) ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode manifest of %s: %w", m.Node, err)
	}
	return append(b, '\n'), nil
}

// ReadManifest decodes and validates a manifest from r (at most 1 MiB). Unknown fields
// are refused: a field this reader does not know may change what the files mean.
func ReadManifest(r io.Reader) (Manifest, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxManifestBytes+1))
	if err != nil {
		return Manifest{}, fmt.Errorf("read manifest: %w", err)
	}
	if len(data) > maxManifestBytes {
		return Manifest{}, fmt.Errorf("%w: larger than %d bytes", ErrBadManifest, maxManifestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	if dec.More() {
		return Manifest{}, fmt.Errorf("%w: data after the manifest object", ErrBadManifest)
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// Validate checks what a reader relies on: the schema, a node, a created time, and files
// with safe, unique names, non-negative sizes and sha256 digests.
func (m Manifest) Validate() error {
	if m.Schema != Schema {
		return fmt.Errorf("%w: schema %q, want %q", ErrBadManifest, m.Schema, Schema)
	}
	if m.Node == "" {
		return fmt.Errorf("%w: no node", ErrBadManifest)
	}
	if m.Created.IsZero() {
		return fmt.Errorf("%w: no created time", ErrBadManifest)
	}
	seen := map[string]bool{ManifestName: true}
	for i, f := range m.Files {
		if !safeName(f.Name) {
			return fmt.Errorf("%w: file %d: unsafe name %q", ErrBadManifest, i, f.Name)
		}
		if seen[f.Name] {
			return fmt.Errorf("%w: file %q listed twice (or named like the manifest)", ErrBadManifest, f.Name)
		}
		seen[f.Name] = true
		if f.Bytes < 0 || f.Items < 0 || f.Dropped < 0 {
			return fmt.Errorf("%w: file %q: negative size or count", ErrBadManifest, f.Name)
		}
		if d, err := hex.DecodeString(f.SHA256); err != nil || len(d) != 32 {
			return fmt.Errorf("%w: file %q: sha256 %q is not 64 hex digits", ErrBadManifest, f.Name, f.SHA256)
		}
	}
	return nil
}

// safeName accepts a plain file name: no folder, no "..", printable ASCII, at most 64 bytes.
func safeName(name string) bool {
	if name == "" || len(name) > 64 || name != path.Base(name) || name == "." || name == ".." {
		return false
	}
	for _, r := range name {
		if r <= ' ' || r > '~' || r == '/' || r == '\\' {
			return false
		}
	}
	return true
}
