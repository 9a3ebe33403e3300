package cdispec

import (
	"io/fs"
	"sync"

	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpunode/gpunode/internal/gpu"
)

// Source builds the node's spec (Build over Discover, or over SimulatedHost for simulated
// GPUs) and keeps it while the set of GPUs and the driver version stay the same, so that a
// caller asking for it often (the DRA plugin at every Prepare) discovers the host once.
// Safe for concurrent use.
type Source struct {
	// Root is the host root the device nodes and libraries are found under.
	Root fs.FS
	// Simulated: the spec is SimulatedHost's, and nothing is discovered under Root.
	Simulated bool

	mu   sync.Mutex
	key  string
	spec *specs.Spec
}

// Spec is the spec of snap's GPUs (those whose UUID could be read) and the key of that
// set of GPUs: the same key means the same spec.
func (s *Source) Spec(snap *gpu.Snapshot) (*specs.Spec, string, error) {
	devs := s.gpus(snap)
	key := gpuKey(snap.Driver.Version, devs)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spec != nil && key == s.key {
		return s.spec, key, nil
	}
	var h *Host
	if s.Simulated {
		h = SimulatedHost(devs)
	} else {
		var err error
		if h, err = Discover(s.Root, snap.Driver.Version, devs); err != nil {
			return nil, "", err
		}
	}
	spec, err := Build(devs, h)
	if err != nil {
		return nil, "", err
	}
	s.key, s.spec = key, spec
	return spec, key, nil
}

// gpus are the GPUs of snap a spec names: those whose UUID could be read.
func (*Source) gpus(snap *gpu.Snapshot) []gpu.Device {
	var devs []gpu.Device
	for _, d := range snap.Devices {
		if d.UUID != "" && d.Err(gpu.FieldUUID) == nil {
			devs = append(devs, d)
		}
	}
	return devs
}
