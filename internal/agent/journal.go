package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/gpunode/gpunode/internal/atomicfile"
)

// FileJournal keeps the step in flight in one JSON file on the host (it must outlive the
// agent's container and survive a reboot: a hostPath folder, not the pod's file system).
type FileJournal struct {
	Path string
}

var _ Journal = FileJournal{}

// Load reads the step in flight; a missing file means none.
func (f FileJournal) Load() (JournalEntry, bool, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return JournalEntry{}, false, nil
	}
	if err != nil {
		return JournalEntry{}, false, fmt.Errorf("read remediation journal %s: %w", f.Path, err)
	}
	var j JournalEntry
	if err := json.Unmarshal(b, &j); err != nil {
		return JournalEntry{}, false, fmt.Errorf("remediation journal %s: %w", f.Path, err)
	}
	if j.ID <= 0 || j.Step == "" {
		return JournalEntry{}, false, fmt.Errorf("remediation journal %s: no id or step", f.Path)
	}
	return j, true, nil
}

// Save writes the step in flight atomically.
func (f FileJournal) Save(j JournalEntry) error {
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("remediation journal %s: %w", f.Path, err)
	}
	if err := atomicfile.WriteFile(f.Path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write remediation journal %s: %w", f.Path, err)
	}
	return nil
}

// Clear forgets the step in flight.
func (f FileJournal) Clear() error {
	if err := os.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear remediation journal %s: %w", f.Path, err)
	}
	return nil
}
