package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/gpunode/gpunode/internal/atomicfile"
)

// clearedVersion is the format version of the cleared-XIDs file.
const clearedVersion = 1

// maxClearedFile bounds the file read: a boot's cleared lines are a few kilobytes.
const maxClearedFile = 4 << 20

// FileCleared keeps the cleared XIDs in one JSON file on the host, under the agent's state
// folder (a hostPath folder: it must outlive the agent's container).
type FileCleared struct {
	Path string
}

var _ ClearedStore = FileCleared{}

type clearedFile struct {
	Version int `json:"version"`
	ClearedXIDs
}

// Load reads the saved set; a missing file means none. A file that is there but cannot be
// read or parsed is an error naming the file.
func (f FileCleared) Load() (ClearedXIDs, bool, error) {
	fh, err := os.Open(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return ClearedXIDs{}, false, nil
	}
	if err != nil {
		return ClearedXIDs{}, false, fmt.Errorf("cleared XIDs %s: %w", f.Path, err)
	}
	defer func() { _ = fh.Close() }()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(fh, maxClearedFile+1)); err != nil {
		return ClearedXIDs{}, false, fmt.Errorf("cleared XIDs %s: %w", f.Path, err)
	}
	if buf.Len() > maxClearedFile {
		return ClearedXIDs{}, false, fmt.Errorf("cleared XIDs %s: larger than %d bytes", f.Path, maxClearedFile)
	}
	var cf clearedFile
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cf); err != nil {
		return ClearedXIDs{}, false, fmt.Errorf("cleared XIDs %s: not a cleared-XIDs file: %w", f.Path, err)
	}
	if cf.Version != clearedVersion || cf.BootID == "" && len(cf.Lines) > 0 {
		return ClearedXIDs{}, false, fmt.Errorf("cleared XIDs %s: want version %d with a boot id, got version %d", f.Path, clearedVersion, cf.Version)
	}
	for i, l := range cf.Lines {
		if l.Line == "" || l.N <= 0 {
			return ClearedXIDs{}, false, fmt.Errorf("cleared XIDs %s: line %d has no text or no count", f.Path, i)
		}
	}
	return cf.ClearedXIDs, true, nil
}

// Save writes the set atomically (a crash leaves the old set or the new one).
func (f FileCleared) Save(c ClearedXIDs) error {
	if c.Lines == nil {
		c.Lines = []ClearedLine{}
	}
	b, err := json.Marshal(clearedFile{Version: clearedVersion, ClearedXIDs: c})
	if err != nil {
		return fmt.Errorf("cleared XIDs %s: %w", f.Path, err)
	}
	if err := atomicfile.WriteFile(f.Path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write cleared XIDs %s: %w", f.Path, err)
	}
	return nil
}
