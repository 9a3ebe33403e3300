package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"time"
)

// Summary is what the GPUNode status and an Event say of a bundle.
type Summary struct {
	// Name is the file name; Path the full path on the host.
	Name string `json:"name"`
	Path string `json:"path"`
	// SHA256 is the archive's sha256 (also in its name); ManifestSHA256 the manifest's.
	SHA256         string `json:"sha256"`
	ManifestSHA256 string `json:"manifestSha256"`
	// Bytes is the archive's size; ContentBytes the sum of its files, uncompressed.
	Bytes        int64     `json:"bytes"`
	ContentBytes int64     `json:"contentBytes"`
	Created      time.Time `json:"created"`
	Node         string    `json:"node"`
	// Trigger is the trigger finding's cause ("xid-79"); TriggerGPU its GPU ("" = node).
	Trigger    string   `json:"trigger"`
	TriggerGPU string   `json:"triggerGpu,omitempty"`
	GPUs       []string `json:"gpus"`
	Counts     Counts   `json:"counts"`
	// Truncated is true when a cap dropped items (the manifest says which).
	Truncated bool `json:"truncated"`
	// Removed are the bundles retention removed after this one was written;
	// RetentionError why some could not be removed.
	Removed        []string `json:"removed,omitempty"`
	RetentionError string   `json:"retentionError,omitempty"`
}

// Counts are the items of each file.
type Counts struct {
	KernelRecords int `json:"kernelRecords"`
	Snapshots     int `json:"snapshots"`
	Findings      int `json:"findings"`
	Pods          int `json:"pods"`
	// Errors is the number of sources that could not be collected.
	Errors int `json:"errors"`
	// Dropped is the number of items the caps dropped, over all files.
	Dropped int `json:"dropped"`
}

// summarize describes a bundle written at path.
func summarize(b Bundle, path, sha string, size int64) Summary {
	m := b.Manifest
	ms := sha256.Sum256(b.ManifestJSON)
	s := Summary{
		Name: filepath.Base(path), Path: path, SHA256: sha, ManifestSHA256: hex.EncodeToString(ms[:]),
		Bytes: size, ContentBytes: m.Bytes(), Created: m.Created, Node: m.Node,
		Trigger: m.Trigger.Cause, TriggerGPU: m.Trigger.GPU, GPUs: m.GPUs, Truncated: m.Truncated,
	}
	for _, f := range m.Files {
		s.Counts.Dropped += f.Dropped
		switch f.Name {
		case FileKernel:
			s.Counts.KernelRecords = f.Items
		case FileGPU:
			s.Counts.Snapshots = f.Items
		case FileFindings:
			s.Counts.Findings = f.Items
		case FilePods:
			s.Counts.Pods = f.Items
		}
	}
	s.Counts.Errors = len(m.Failed)
	return s
}
