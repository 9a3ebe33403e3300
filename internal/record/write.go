package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpunode/gpunode/internal/atomicfile"
)

// Files are the paths a record was written to.
type Files struct {
	JSON     string `json:"json"`
	Markdown string `json:"markdown"`
	SHA256   string `json:"sha256"`
}

// Write stores the record in dir as <id>.json and <id>.md, each written to a temporary file
// in the same folder, synced and renamed, so a reader never sees half a record. The JSON
// names itself as the evidence URI; the Markdown carries the JSON's sha256. The record is
// updated with that URI.
func Write(dir string, r *Record) (Files, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Files{}, fmt.Errorf("record folder %s: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Files{}, fmt.Errorf("record folder %s: %w", dir, err)
	}
	files := Files{JSON: filepath.Join(abs, r.ID+".json"), Markdown: filepath.Join(abs, r.ID+".md")}
	uri := "file://" + files.JSON
	if !strings.Contains(r.Template.ResultEvidenceURI.Value, uri) {
		r.Template.ResultEvidenceURI.Value = fmt.Sprintf("%s; evidence %s", r.Template.ResultEvidenceURI.Value, uri)
	}
	data, err := JSON(r)
	if err != nil {
		return Files{}, err
	}
	sum := sha256.Sum256(data)
	files.SHA256 = hex.EncodeToString(sum[:])
	var md bytes.Buffer
	if err := Markdown(&md, r, files.SHA256); err != nil {
		return Files{}, fmt.Errorf("render record %s as Markdown: %w", r.ID, err)
	}
	if err := WriteFileAtomic(files.JSON, data, 0o644); err != nil {
		return Files{}, err
	}
	if err := WriteFileAtomic(files.Markdown, md.Bytes(), 0o644); err != nil {
		return Files{}, err
	}
	return files, nil
}

// WriteFileAtomic writes data to path atomically (atomicfile.WriteFile).
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return atomicfile.WriteFile(path, data, perm)
}
