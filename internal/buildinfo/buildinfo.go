// Package buildinfo says which gpunode this is.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set at link time: -ldflags "-X github.com/gpunode/gpunode/internal/buildinfo.version=v0.1.0".
var (
	version = "dev"
	commit  = ""
)

// Info identifies the binary.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the binary's identity, taking the VCS revision from the Go build info when
// the linker did not set one.
func Get() Info {
	i := Info{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if i.Commit == "" {
					i.Commit = s.Value
				}
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	return i
}
