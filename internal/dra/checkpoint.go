package dra

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gpunode/gpunode/internal/atomicfile"
)

// CheckpointFile is the checkpoint's name in the plugin's data folder.
const CheckpointFile = "checkpoint.json"

// checkpointVersion is the format of the file; another version is refused, not guessed.
const checkpointVersion = 1

// Checkpoint is every claim prepared on the node, by claim UID. It is read at the start of
// each Prepare and Unprepare and written (atomically) before their answer, so an agent
// restart, or a new agent pod beside the old one during a rolling update, sees exactly
// the claims the kubelet was told are prepared.
type Checkpoint struct {
	Version int                      `json:"version"`
	Claims  map[string]PreparedClaim `json:"claims"`
}

// PreparedClaim is one prepared claim.
type PreparedClaim struct {
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	Devices   []PreparedDevice `json:"devices"`
}

// PreparedDevice is one device of a prepared claim.
type PreparedDevice struct {
	Requests []string `json:"requests"`
	Pool     string   `json:"pool"`
	Device   string   `json:"device"`
	// UUID is the GPU's or MIG device's UUID; Parent a MIG device's GPU.
	UUID   string `json:"uuid"`
	Parent string `json:"parent,omitempty"`
	// AdminAccess: the claim may see the device while another claim holds it.
	AdminAccess bool     `json:"adminAccess,omitempty"`
	CDIDevices  []string `json:"cdiDevices"`
}

// readCheckpoint reads dir's checkpoint; a missing file is an empty checkpoint.
func readCheckpoint(dir string) (*Checkpoint, error) {
	path := filepath.Join(dir, CheckpointFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Checkpoint{Version: checkpointVersion, Claims: map[string]PreparedClaim{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dra checkpoint: %w", err)
	}
	var c Checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("dra checkpoint %s: %w", path, err)
	}
	if c.Version != checkpointVersion {
		return nil, fmt.Errorf("dra checkpoint %s: version %d, want %d", path, c.Version, checkpointVersion)
	}
	if c.Claims == nil {
		c.Claims = map[string]PreparedClaim{}
	}
	return &c, nil
}

// write replaces dir's checkpoint atomically.
func (c *Checkpoint) write(dir string) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("dra checkpoint: encode: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, CheckpointFile), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("dra checkpoint: %w", err)
	}
	return nil
}

// holder is the claim other than uid that holds a device overlapping d without admin
// access ("" when none): the same device, a MIG device of the GPU d is, or d's GPU.
func (c *Checkpoint) holder(uid string, d PreparedDevice) string {
	for other, pc := range c.Claims {
		if other == uid {
			continue
		}
		for _, h := range pc.Devices {
			if h.AdminAccess {
				continue
			}
			if h.UUID == d.UUID || h.UUID == d.Parent || h.Parent == d.UUID {
				return pc.Namespace + "/" + pc.Name + " (" + other + ")"
			}
		}
	}
	return ""
}
