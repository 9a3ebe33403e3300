package kmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/gpunode/gpunode/internal/atomicfile"
)

// ErrBadCursor is wrapped by every error about a cursor file that exists but cannot be
// used. The caller decides: stop, or start fresh with StartBeginning (which overwrites it).
var ErrBadCursor = errors.New("unusable kernel-log cursor")

// Cursor says how far a consumer has read the kernel log: the last sequence number it
// handled in one boot. Sequence numbers restart at 0 on every boot, so the boot id tells
// a resume from a reboot.
type Cursor struct {
	BootID string `json:"bootID"`
	Seq    uint64 `json:"seq"`
}

const cursorVersion = 1

type cursorFile struct {
	Version int `json:"version"`
	Cursor
}

// LoadCursor reads the cursor saved at path. A missing file is no cursor (ok false, no
// error); a file that is there but unreadable or malformed is an error wrapping
// ErrBadCursor and naming the file.
func LoadCursor(path string) (c Cursor, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Cursor{}, false, nil
	}
	if err != nil {
		return Cursor{}, false, fmt.Errorf("kernel-log cursor %s: %w: %w", path, ErrBadCursor, err)
	}
	var cf cursorFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cf); err != nil || dec.More() {
		if err == nil {
			err = errors.New("data after the cursor")
		}
		return Cursor{}, false, fmt.Errorf("kernel-log cursor %s: %w: %w", path, ErrBadCursor, err)
	}
	if cf.Version != cursorVersion || cf.BootID == "" {
		return Cursor{}, false, fmt.Errorf("kernel-log cursor %s: %w: want version %d and a boot id, got version %d, boot id %q",
			path, ErrBadCursor, cursorVersion, cf.Version, cf.BootID)
	}
	return cf.Cursor, true, nil
}

// SaveCursor writes c to path atomically: a temporary file in the same directory is
// written and fsynced, renamed over path, and the directory is fsynced, so a crash leaves
// either the old cursor or the new one, never a torn file.
func SaveCursor(path string, c Cursor) error {
	data, err := json.Marshal(cursorFile{Version: cursorVersion, Cursor: c})
	if err != nil {
		return fmt.Errorf("kernel-log cursor %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("kernel-log cursor: %w", err)
	}
	return nil
}

// bootIDPath is where Linux publishes the random id of the running boot, relative to the
// host root.
const bootIDPath = "proc/sys/kernel/random/boot_id"

// ReadBootID reads the id of the running boot under root (os.DirFS("/") on a host).
func ReadBootID(root fs.FS) (string, error) {
	data, err := fs.ReadFile(root, bootIDPath)
	if err != nil {
		return "", fmt.Errorf("boot id /%s: %w", bootIDPath, err)
	}
	id := strings.TrimSpace(string(data))
	if id == "" {
		return "", fmt.Errorf("boot id /%s: empty", bootIDPath)
	}
	return id, nil
}
