package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Kubelet is what the kubelet config file reserves and how it places work.
// Flags given on the kubelet command line override the file and are not seen here.
type Kubelet struct {
	// ConfigPath is the file read.
	ConfigPath     string            `json:"configPath,omitempty"`
	KubeReserved   map[string]string `json:"kubeReserved,omitempty"`
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	EvictionHard   map[string]string `json:"evictionHard,omitempty"`
	EvictionSoft   map[string]string `json:"evictionSoft,omitempty"`
	// ReservedSystemCPUs is an explicit CPU list for system daemons ("0-1").
	ReservedSystemCPUs string `json:"reservedSystemCPUs,omitempty"`
	// MaxPods is 0 when the file does not set it (the kubelet's default is 110).
	MaxPods               int32  `json:"maxPods,omitempty"`
	CPUManagerPolicy      string `json:"cpuManagerPolicy,omitempty"`
	TopologyManagerPolicy string `json:"topologyManagerPolicy,omitempty"`
	TopologyManagerScope  string `json:"topologyManagerScope,omitempty"`
	MemoryManagerPolicy   string `json:"memoryManagerPolicy,omitempty"`
	CgroupDriver          string `json:"cgroupDriver,omitempty"`
}

// Reserves reports whether kubeReserved or systemReserved sets a non-zero amount of the
// resource ("cpu", "memory", "ephemeral-storage"); for "cpu" reservedSystemCPUs counts too.
func (k Kubelet) Reserves(resource string) bool {
	if resource == "cpu" && strings.TrimSpace(k.ReservedSystemCPUs) != "" {
		return true
	}
	return nonZero(k.KubeReserved[resource]) || nonZero(k.SystemReserved[resource])
}

// nonZero reports whether a quantity such as "2Gi", "500m" or "1" is set and not zero.
func nonZero(q string) bool {
	num := strings.TrimRightFunc(strings.TrimSpace(q), func(r rune) bool {
		return (r < '0' || r > '9') && r != '.'
	})
	v, err := strconv.ParseFloat(num, 64)
	return err == nil && v > 0
}

// kubeletFile is the part of KubeletConfiguration gpunode reads.
type kubeletFile struct {
	Kind                  string         `json:"kind"`
	KubeReserved          map[string]any `json:"kubeReserved"`
	SystemReserved        map[string]any `json:"systemReserved"`
	EvictionHard          map[string]any `json:"evictionHard"`
	EvictionSoft          map[string]any `json:"evictionSoft"`
	ReservedSystemCPUs    string         `json:"reservedSystemCPUs"`
	MaxPods               int32          `json:"maxPods"`
	CPUManagerPolicy      string         `json:"cpuManagerPolicy"`
	TopologyManagerPolicy string         `json:"topologyManagerPolicy"`
	TopologyManagerScope  string         `json:"topologyManagerScope"`
	MemoryManagerPolicy   string         `json:"memoryManagerPolicy"`
	CgroupDriver          string         `json:"cgroupDriver"`
}

// ParseKubeletConfig parses a KubeletConfiguration file (YAML or JSON).
func ParseKubeletConfig(data []byte) (Kubelet, error) {
	var kf kubeletFile
	useNumber := func(d *json.Decoder) *json.Decoder { d.UseNumber(); return d }
	if err := yaml.Unmarshal(data, &kf, useNumber); err != nil {
		return Kubelet{}, fmt.Errorf("parse kubelet config: %w", err)
	}
	if kf.Kind != "KubeletConfiguration" {
		return Kubelet{}, fmt.Errorf("parse kubelet config: kind %q, want KubeletConfiguration", kf.Kind)
	}
	return Kubelet{
		KubeReserved:          quantities(kf.KubeReserved),
		SystemReserved:        quantities(kf.SystemReserved),
		EvictionHard:          quantities(kf.EvictionHard),
		EvictionSoft:          quantities(kf.EvictionSoft),
		ReservedSystemCPUs:    kf.ReservedSystemCPUs,
		MaxPods:               kf.MaxPods,
		CPUManagerPolicy:      kf.CPUManagerPolicy,
		TopologyManagerPolicy: kf.TopologyManagerPolicy,
		TopologyManagerScope:  kf.TopologyManagerScope,
		MemoryManagerPolicy:   kf.MemoryManagerPolicy,
		CgroupDriver:          kf.CgroupDriver,
	}, nil
}

// quantities turns YAML scalars (1, "2Gi", 0.5) into their string form.
func quantities(m map[string]any) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case string:
			out[k] = v
		case json.Number:
			out[k] = v.String()
		case nil:
			out[k] = ""
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}

// readKubelet reads the kubelet config: the given path, else the first default that exists.
func (r *Reader) readKubelet(f *Facts, path string) {
	candidates := DefaultKubeletConfigs
	if path != "" {
		candidates = []string{path}
	}
	var data []byte
	var err error
	for _, c := range candidates {
		if data, err = r.readFile(c); err == nil || !errors.Is(err, fs.ErrNotExist) {
			path = c
			break
		}
	}
	if err != nil && len(candidates) > 1 && errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("no kubelet config at %s: %w", strings.Join(candidates, ", "), fs.ErrNotExist)
	}
	if err != nil {
		f.setErr(FactKubelet, err)
		return
	}
	k, err := ParseKubeletConfig(data)
	if err != nil {
		f.setErr(FactKubelet, fmt.Errorf("%s: %w", path, err))
	}
	k.ConfigPath = path
	f.Kubelet = k
}
