package cdi

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpunode/gpunode/internal/host/redact"
	"github.com/gpunode/gpunode/internal/host/rootfs"
)

// Report is every CDI spec file found and what is wrong with each.
type Report struct {
	// Dirs are the folders searched, in increasing priority.
	Dirs []string `json:"dirs"`
	// UUIDsChecked: GPU UUID references were compared with the host's GPUs (false when the
	// GPU list was unknown).
	UUIDsChecked bool       `json:"uuidsChecked"`
	Specs        []SpecFile `json:"specs,omitempty"`
	// Duplicates are devices defined in more than one file. The file in the folder of
	// highest priority wins; two in the same folder make the runtime refuse the device.
	Duplicates []Duplicate `json:"duplicates,omitempty"`
	// DirErrors are folders that exist but could not be listed.
	DirErrors []string `json:"dirErrors,omitempty"`
}

// Stale returns the spec files that reference something missing.
func (r Report) Stale() []SpecFile {
	var out []SpecFile
	for _, s := range r.Specs {
		if len(s.Stale) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// SpecFile is one spec file.
type SpecFile struct {
	Path string `json:"path"`
	// Priority is the index of its folder in Report.Dirs.
	Priority int    `json:"priority"`
	Version  string `json:"cdiVersion,omitempty"`
	// Kind is "vendor/class", e.g. "nvidia.com/gpu".
	Kind string `json:"kind,omitempty"`
	// Devices are the device names ("0", "all", "GPU-…"); the runtime's name is Kind=Name.
	Devices []string `json:"devices,omitempty"`
	// Stale are the references to GPUs or device nodes this host does not have.
	Stale []StaleRef `json:"stale,omitempty"`
	// Error is why the file could not be read or is not a valid spec ("" when valid). An
	// invalid file is ignored by the runtime.
	Error string `json:"error,omitempty"`
}

// Stale reference kinds.
const (
	RefGPUUUID    = "gpu-uuid"
	RefDeviceNode = "device-node"
)

// StaleRef is one reference to something missing.
type StaleRef struct {
	// Device is the CDI device name; "" for the spec's common edits.
	Device string `json:"device,omitempty"`
	// Kind is RefGPUUUID or RefDeviceNode.
	Kind string `json:"kind"`
	// Missing is the GPU UUID or the host device node path.
	Missing string `json:"missing"`
}

// Duplicate is a device defined by several files.
type Duplicate struct {
	// Device is the qualified name, "nvidia.com/gpu=0".
	Device string   `json:"device"`
	Files  []string `json:"files"`
}

// gpuUUID matches an NVIDIA GPU UUID anywhere in a string.
var gpuUUID = regexp.MustCompile(`(?i)GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// Scan reads every *.json and *.yaml file directly in dirs (absolute host paths) from fsys,
// whose root is the host's "/", and checks each spec: a referenced GPU UUID not in gpuUUIDs
// or a referenced device node missing from fsys is stale. gpuUUIDs nil means the GPUs are
// unknown and UUIDs are not checked. Missing folders are skipped.
func Scan(fsys fs.FS, dirs []string, gpuUUIDs []string) Report {
	rep := Report{Dirs: dirs, UUIDsChecked: gpuUUIDs != nil}
	var known map[string]bool
	if gpuUUIDs != nil {
		known = make(map[string]bool, len(gpuUUIDs))
		for _, u := range gpuUUIDs {
			known[strings.ToLower(u)] = true
		}
	}
	devExists := func(p string) bool {
		_, err := fs.Stat(fsys, rootfs.Path(p))
		return err == nil
	}
	defined := map[string][]string{}
	for prio, dir := range dirs {
		ents, err := fs.ReadDir(fsys, rootfs.Path(dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			rep.DirErrors = append(rep.DirErrors, fmt.Sprintf("list %s: %v", dir, rootfs.Inner(err)))
			continue
		}
		for _, e := range ents {
			if ext := path.Ext(e.Name()); e.IsDir() || (ext != ".json" && ext != ".yaml") {
				continue
			}
			sf := checkFile(fsys, path.Join(dir, e.Name()), prio, known, devExists)
			for _, d := range sf.Devices {
				if sf.Error == "" {
					q := sf.Kind + "=" + d
					defined[q] = append(defined[q], sf.Path)
				}
			}
			rep.Specs = append(rep.Specs, sf)
		}
	}
	for q, files := range defined {
		if len(files) > 1 {
			rep.Duplicates = append(rep.Duplicates, Duplicate{Device: q, Files: files})
		}
	}
	sort.Slice(rep.Duplicates, func(i, j int) bool { return rep.Duplicates[i].Device < rep.Duplicates[j].Device })
	return rep
}

// checkFile reads, validates and checks one spec file.
func checkFile(fsys fs.FS, p string, prio int, known map[string]bool, devExists func(string) bool) SpecFile {
	sf := SpecFile{Path: p, Priority: prio}
	data, err := fs.ReadFile(fsys, rootfs.Path(p))
	if err != nil {
		sf.Error = fmt.Sprintf("read %s: %v", p, rootfs.Inner(err))
		return sf
	}
	raw, err := Parse(data)
	if err != nil {
		sf.Error = redact.Quoted(err.Error()) // the record is readable in the cluster
	}
	if raw == nil {
		return sf
	}
	sf.Version, sf.Kind = raw.Version, raw.Kind
	for _, d := range raw.Devices {
		sf.Devices = append(sf.Devices, d.Name)
	}
	sf.Stale = StaleRefs(raw, known, devExists)
	return sf
}

// StaleRefs lists the references of a spec to GPUs not in known (lower-case UUIDs; nil:
// not checked) and to host device nodes for which devExists is false.
func StaleRefs(raw *specs.Spec, known map[string]bool, devExists func(string) bool) []StaleRef {
	var out []StaleRef
	seen := map[StaleRef]bool{}
	add := func(r StaleRef) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	check := func(device string, texts []string, edits *specs.ContainerEdits) {
		if known != nil {
			for _, t := range texts {
				for _, u := range gpuUUID.FindAllString(t, -1) {
					if !known[strings.ToLower(u)] {
						add(StaleRef{Device: device, Kind: RefGPUUUID, Missing: u})
					}
				}
			}
		}
		for _, n := range edits.DeviceNodes {
			if n == nil {
				continue
			}
			host := n.HostPath
			if host == "" {
				host = n.Path
			}
			if host != "" && !devExists(host) {
				add(StaleRef{Device: device, Kind: RefDeviceNode, Missing: host})
			}
		}
	}
	check("", append(values(raw.Annotations), editTexts(&raw.ContainerEdits)...), &raw.ContainerEdits)
	for i := range raw.Devices {
		d := &raw.Devices[i]
		texts := append([]string{d.Name}, values(d.Annotations)...)
		check(d.Name, append(texts, editTexts(&d.ContainerEdits)...), &d.ContainerEdits)
	}
	return out
}

// editTexts are the strings of container edits that can name a GPU: environment and hooks.
func editTexts(e *specs.ContainerEdits) []string {
	texts := append([]string(nil), e.Env...)
	for _, h := range e.Hooks {
		if h != nil {
			texts = append(texts, h.Args...)
			texts = append(texts, h.Env...)
		}
	}
	return texts
}

func values(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}
