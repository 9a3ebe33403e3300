// Package containerd reads what gpunode needs from containerd's configuration (the CRI
// runtimes, the default runtime, CDI, the data root) and from `containerd --version`.
package containerd

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// CRI plugin table names by config version.
const (
	criPluginV1 = "cri"                          // version 1 (containerd 1.x)
	criPluginV2 = "io.containerd.grpc.v1.cri"    // version 2 (containerd 1.x)
	criPluginV3 = "io.containerd.cri.v1.runtime" // version 3 (containerd 2.x)
)

// Config is the CRI runtime configuration after imports are merged.
type Config struct {
	// Path is the main file; Files are it and the imported files in merge order.
	Path  string   `json:"path,omitempty"`
	Files []string `json:"files,omitempty"`
	// Version is the main file's config version (1 when the file does not set one).
	Version int `json:"version"`
	// Root is containerd's data folder ("" when not set: /var/lib/containerd).
	Root string `json:"root,omitempty"`
	// DefaultRuntime is default_runtime_name ("" when not set: "runc").
	DefaultRuntime string `json:"defaultRuntime,omitempty"`
	// Runtimes are the CRI runtimes, sorted by name.
	Runtimes []Runtime `json:"runtimes,omitempty"`
	// EnableCDI is enable_cdi, nil when not set (containerd 2.x defaults to true, 1.7 to false).
	EnableCDI   *bool    `json:"enableCdi,omitempty"`
	CDISpecDirs []string `json:"cdiSpecDirs,omitempty"`
	// NvidiaRuntime: a runtime is named "nvidia" or runs nvidia-container-runtime.
	NvidiaRuntime bool `json:"nvidiaRuntime"`
	// NvidiaDefault: the default runtime is such a runtime.
	NvidiaDefault bool `json:"nvidiaDefault"`
	// imports are the main file's import patterns, as written.
	imports []string
}

// Runtime is one CRI runtime handler.
type Runtime struct {
	Name string `json:"name"`
	// Type is runtime_type, e.g. "io.containerd.runc.v2".
	Type string `json:"type,omitempty"`
	// BinaryName is options.BinaryName, e.g. "/usr/bin/nvidia-container-runtime".
	BinaryName string `json:"binaryName,omitempty"`
	// Nvidia: named "nvidia" or running an nvidia-container-runtime binary.
	Nvidia bool `json:"nvidia"`
}

// Runtime returns the runtime of that name.
func (c *Config) Runtime(name string) (Runtime, bool) {
	for _, r := range c.Runtimes {
		if r.Name == name {
			return r, true
		}
	}
	return Runtime{}, false
}

// Parse parses one containerd config file (TOML, versions 1 to 3), without its imports.
func Parse(data []byte) (*Config, error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse containerd config: %w", err)
	}
	c := &Config{Version: 1}
	if v, ok := doc["version"]; ok {
		n, ok := v.(int64)
		if !ok || n < 1 || n > 3 {
			return nil, fmt.Errorf("parse containerd config: version %v, want 1, 2 or 3", v)
		}
		c.Version = int(n)
	}
	c.Root, _ = doc["root"].(string)
	c.imports = stringList(doc["imports"])
	plugins := table(doc["plugins"])
	for _, name := range criPlugins(c.Version) {
		c.merge(criSection(table(plugins[name])))
	}
	c.finish()
	return c, nil
}

// criPlugins are the CRI plugin tables that hold the runtimes in a config version; version
// 1 accepts the short name and the full plugin id.
func criPlugins(version int) []string {
	switch version {
	case 3:
		return []string{criPluginV3}
	case 2:
		return []string{criPluginV2}
	}
	return []string{criPluginV1, criPluginV2}
}

// criSection reads one CRI plugin table.
func criSection(cri map[string]any) *Config {
	c := &Config{}
	ctrd := table(cri["containerd"])
	c.DefaultRuntime, _ = ctrd["default_runtime_name"].(string)
	if b, ok := cri["enable_cdi"].(bool); ok {
		c.EnableCDI = &b
	}
	c.CDISpecDirs = stringList(cri["cdi_spec_dirs"])
	for name, v := range table(ctrd["runtimes"]) {
		rt := table(v)
		r := Runtime{Name: name}
		r.Type, _ = rt["runtime_type"].(string)
		r.BinaryName, _ = table(rt["options"])["BinaryName"].(string)
		c.Runtimes = append(c.Runtimes, r)
	}
	return c
}

// finish sorts the runtimes and sets the NVIDIA flags.
func (c *Config) finish() {
	sort.Slice(c.Runtimes, func(i, j int) bool { return c.Runtimes[i].Name < c.Runtimes[j].Name })
	c.NvidiaRuntime, c.NvidiaDefault = false, false
	for i := range c.Runtimes {
		r := &c.Runtimes[i]
		r.Nvidia = r.Name == "nvidia" || strings.HasPrefix(path.Base(r.BinaryName), "nvidia-container-runtime")
		if r.Nvidia {
			c.NvidiaRuntime = true
			if r.Name == c.DefaultRuntime {
				c.NvidiaDefault = true
			}
		}
	}
}

// merge lays an imported file over c as containerd does: set scalars override, lists
// append, tables (the runtimes) merge key by key.
func (c *Config) merge(o *Config) {
	if o.Root != "" {
		c.Root = o.Root
	}
	if o.DefaultRuntime != "" {
		c.DefaultRuntime = o.DefaultRuntime
	}
	if o.EnableCDI != nil {
		c.EnableCDI = o.EnableCDI
	}
	for _, d := range o.CDISpecDirs {
		if !contains(c.CDISpecDirs, d) {
			c.CDISpecDirs = append(c.CDISpecDirs, d)
		}
	}
	for _, r := range o.Runtimes {
		i := sort.Search(len(c.Runtimes), func(i int) bool { return c.Runtimes[i].Name >= r.Name })
		if i < len(c.Runtimes) && c.Runtimes[i].Name == r.Name {
			if r.Type != "" {
				c.Runtimes[i].Type = r.Type
			}
			if r.BinaryName != "" {
				c.Runtimes[i].BinaryName = r.BinaryName
			}
			continue
		}
		c.Runtimes = append(c.Runtimes, r)
		sort.Slice(c.Runtimes, func(i, j int) bool { return c.Runtimes[i].Name < c.Runtimes[j].Name })
	}
	c.finish()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// table returns v as a TOML table, or nil.
func table(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// stringList returns the strings of a TOML array (non-strings are skipped).
func stringList(v any) []string {
	arr, _ := v.([]any)
	var out []string
	for _, x := range arr {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
