package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// WriteFileAtomic writes data to path through a synced temporary file and a rename.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// Sync the folder so the rename itself survives a crash.
	if d, derr := os.Open(filepath.Dir(path)); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
