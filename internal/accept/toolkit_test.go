package accept

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/host/cdi"
)

func TestToolkitReadiness(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(f *Facts)
		ready  bool
		says   string
	}{
		{"a node with the nvidia runtime and valid CDI specs is ready", func(*Facts) {}, true, "nvidia runtime"},
		{"containerd without an nvidia runtime or CDI is not ready", func(f *Facts) {
			c := *f.Host.Containerd.Config
			c.NvidiaRuntime, c.NvidiaDefault, c.EnableCDI = false, false, nil
			f.Host.Containerd.Config = &c
		}, false, "host.containerd: "},
		{"a host without containerd is not ready: the toolkit configures containerd", func(f *Facts) {
			f.Host.Containerd.Installed = false
		}, false, "containerd is not installed"},
		{"a containerd outside any version matrix is still ready: versions are not the toolkit's", func(f *Facts) {
			f.Host.Containerd.Version = "1.0.0"
		}, true, "containerd 1.0.0"},
		{"a stale CDI spec is not ready", func(f *Facts) {
			f.Host.CDI.Specs[0].Stale = append(f.Host.CDI.Specs[0].Stale, cdi.StaleRef{Device: "GPU-gone", Kind: cdi.RefGPUUUID, Missing: "GPU-gone"})
		}, false, "host.cdi: "},
		{"an invalid CDI spec is not ready", func(f *Facts) { f.Host.CDI.Specs[0].Error = "invalid device name" }, false, "invalid device name"},
		{"no host facts is not ready, with the reason", func(f *Facts) { f.Host, f.HostErr = nil, errors.New("no root") }, false, "no root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := healthyFacts(t)
			tc.mutate(f)
			ready, msg := ToolkitReadiness(f)
			if ready != tc.ready || !strings.Contains(msg, tc.says) {
				t.Errorf("ready %v %q, want %v containing %q", ready, msg, tc.ready, tc.says)
			}
		})
	}
}
