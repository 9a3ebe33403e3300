package deviceplugin

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/gpunode/gpunode/internal/labels"
	"github.com/gpunode/gpunode/internal/yamlfile"
)

// ConfigVersion is the configuration file version read (the version of NVIDIA's
// k8s-device-plugin config file whose fields it shares).
const ConfigVersion = "v1"

// MIG strategies, as NVIDIA's device plugin and GPU Feature Discovery name them.
const (
	MIGNone   = "none"   // MIG devices are not advertised; GPUs in MIG mode are not either
	MIGSingle = "single" // every GPU is in MIG mode with one profile: MIG devices as nvidia.com/gpu
	MIGMixed  = "mixed"  // each MIG device as nvidia.com/mig-<profile>, whole GPUs as nvidia.com/gpu
)

// Sharing is the device plugin's configuration: the MIG strategy, the Allocate strategy
// and time-slicing. The zero value advertises every whole GPU once by envvar.
type Sharing struct {
	// MIGStrategy is MIGNone (when empty), MIGSingle or MIGMixed.
	MIGStrategy string
	// Strategy is the Allocate strategy; "" leaves the command line's.
	Strategy Strategy
	// TimeSlicing shares resources between containers.
	TimeSlicing TimeSlicing
}

// TimeSlicing is sharing.timeSlicing of the file.
type TimeSlicing struct {
	// RenameByDefault advertises each shared resource as <name>.shared unless it has its
	// own rename.
	RenameByDefault bool
	// FailRequestsGreaterThanOne refuses a container that asks for more than one replica
	// of a shared resource (it would get no more GPU time than with one).
	FailRequestsGreaterThanOne bool
	// Resources are the shared resources.
	Resources []Replicated
}

// Replicated is one shared resource.
type Replicated struct {
	// Name is the resource shared: nvidia.com/gpu or nvidia.com/mig-<profile>.
	Name string
	// Rename is the name the replicas are advertised under; "" keeps Name (or
	// <Name>.shared with RenameByDefault).
	Rename string
	// Replicas is how many devices each GPU (or MIG device) is advertised as; 1 = unshared.
	Replicas int
}

// fileConfig is the file's shape; unknown keys are refused.
type fileConfig struct {
	Version string `yaml:"version"`
	Flags   struct {
		MIGStrategy string `yaml:"migStrategy"`
		Plugin      struct {
			DeviceListStrategy string `yaml:"deviceListStrategy"`
		} `yaml:"plugin"`
	} `yaml:"flags"`
	Sharing struct {
		TimeSlicing struct {
			RenameByDefault            bool `yaml:"renameByDefault"`
			FailRequestsGreaterThanOne bool `yaml:"failRequestsGreaterThanOne"`
			Resources                  []struct {
				Name     string `yaml:"name"`
				Rename   string `yaml:"rename"`
				Replicas int    `yaml:"replicas"`
			} `yaml:"resources"`
		} `yaml:"timeSlicing"`
	} `yaml:"sharing"`
}

// ConfigError is a configuration file problem at a line (0 when the whole file). Its
// text is "FILE:LINE: MSG".
type ConfigError = yamlfile.Error

// LoadConfig reads and parses a configuration file.
func LoadConfig(path string) (Sharing, error) {
	data, err := yamlfile.ReadFile(path)
	if err != nil {
		return Sharing{}, fmt.Errorf("device plugin config %s: %w", path, err)
	}
	return ParseConfig(path, data)
}

var (
	// resourceRE is a resource the plugin advertises: nvidia.com/gpu or nvidia.com/mig-<profile>.
	resourceRE = regexp.MustCompile(`^nvidia\.com/(gpu|mig-[0-9a-z.+]+)$`)
	// extendedRE is an extended resource name: a DNS-subdomain prefix and a name.
	extendedRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
)

// ParseConfig parses a configuration file's bytes (name is for messages). Errors are
// *ConfigError with the line of the offending key.
func ParseConfig(name string, data []byte) (s Sharing, err error) {
	var fc fileConfig
	root, err := yamlfile.Decode(name, data, &fc)
	if errors.Is(err, yamlfile.ErrEmpty) {
		return Sharing{}, &ConfigError{File: name, Msg: "empty configuration (want version: v1)"}
	}
	if err != nil {
		return Sharing{}, yamlConfigError(name, err)
	}
	at := func(path ...any) int { return cmp.Or(yamlfile.KeyLine(root, path...), yamlfile.Body(root).Line) }
	bad := func(line int, format string, args ...any) (Sharing, error) {
		return Sharing{}, &ConfigError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if fc.Version != ConfigVersion {
		return bad(at("version"), "version %q: want %s", fc.Version, ConfigVersion)
	}
	s.MIGStrategy = fc.Flags.MIGStrategy
	if !slices.Contains([]string{"", MIGNone, MIGSingle, MIGMixed}, s.MIGStrategy) {
		return bad(at("flags", "migStrategy"), "migStrategy %q: want none, single or mixed", s.MIGStrategy)
	}
	s.Strategy = Strategy(fc.Flags.Plugin.DeviceListStrategy)
	if s.Strategy != "" && !slices.Contains(Strategies(), s.Strategy) {
		return bad(at("flags", "plugin", "deviceListStrategy"), "deviceListStrategy %q: want one of %v", s.Strategy, Strategies())
	}
	ts := fc.Sharing.TimeSlicing
	s.TimeSlicing = TimeSlicing{RenameByDefault: ts.RenameByDefault, FailRequestsGreaterThanOne: ts.FailRequestsGreaterThanOne}
	seen := map[string]int{}
	for i, r := range ts.Resources {
		line := func(key string) int { return at("sharing", "timeSlicing", "resources", i, key) }
		switch {
		case !resourceRE.MatchString(r.Name):
			return bad(line("name"), "resource name %q: want nvidia.com/gpu or nvidia.com/mig-<profile>", r.Name)
		case r.Rename != "" && !extendedRE.MatchString(r.Rename):
			return bad(line("rename"), "rename %q is not an extended resource name (domain/name)", r.Rename)
		case r.Replicas < 1:
			return bad(line("replicas"), "replicas %d: want at least 1", r.Replicas)
		case r.Replicas > maxReplicas:
			return bad(line("replicas"), "replicas %d: want at most %d", r.Replicas, maxReplicas)
		}
		if first, dup := seen[r.Name]; dup {
			return bad(line("name"), "resource %s is shared twice (first at line %d)", r.Name, first)
		}
		seen[r.Name] = line("name")
		s.TimeSlicing.Resources = append(s.TimeSlicing.Resources, Replicated{Name: r.Name, Rename: r.Rename, Replicas: r.Replicas})
	}
	return s, nil
}

// WithNodeLabels applies the node's labels.KeyReplicasOverride to the full-GPU resource's
// replicas. A malformed value is an error naming the label.
func (s Sharing) WithNodeLabels(nodeLabels map[string]string) (Sharing, error) {
	v, ok := nodeLabels[labels.KeyReplicasOverride]
	if !ok {
		return s, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxReplicas {
		return s, fmt.Errorf("node label %s=%q: want a number of replicas from 1 to %d", labels.KeyReplicasOverride, v, maxReplicas)
	}
	out := s
	out.TimeSlicing.Resources = slices.Clone(s.TimeSlicing.Resources)
	for i := range out.TimeSlicing.Resources {
		if out.TimeSlicing.Resources[i].Name == ResourceName {
			out.TimeSlicing.Resources[i].Replicas = n
			return out, nil
		}
	}
	out.TimeSlicing.Resources = append(out.TimeSlicing.Resources, Replicated{Name: ResourceName, Replicas: n})
	return out, nil
}

// maxReplicas bounds the replicas per device (a typo of 10000 would flood the kubelet).
const maxReplicas = 256

// yamlConfigError keeps the YAML library's wording of its first problem; without a line,
// its whole text.
func yamlConfigError(name string, err error) *ConfigError {
	first := yamlfile.Problems(err)[0]
	if first.Line == 0 {
		first.Msg = errors.Unwrap(err).Error() // "yaml: " and all
	}
	return &ConfigError{File: name, Line: first.Line, Msg: first.Msg}
}
