package host

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/host/cdi"
	"github.com/gpunode/gpunode/internal/host/containerd"
)

// Containerd is the container runtime on the host.
type Containerd struct {
	// Installed: a containerd binary is in one of BinaryDirs.
	Installed  bool   `json:"installed"`
	BinaryPath string `json:"binaryPath,omitempty"`
	// Version such as "1.7.27" or "2.0.4".
	Version string `json:"version,omitempty"`
	// Config is the merged configuration; nil when no file could be read (containerd then
	// runs its built-in defaults: runc only).
	Config *containerd.Config `json:"config,omitempty"`
}

// CDIEnabled says whether containerd's CRI plugin injects CDI devices: enable_cdi when the
// config sets it, else the default of the installed version (on from 2.0, off before).
// known is false when neither the config nor the version tells.
func (c Containerd) CDIEnabled() (enabled, known bool) {
	if c.Config != nil && c.Config.EnableCDI != nil {
		return *c.Config.EnableCDI, true
	}
	major, _, _ := strings.Cut(c.Version, ".")
	switch n, err := strconv.Atoi(major); {
	case err != nil:
		return false, false
	case n >= 2:
		return true, true
	}
	return false, true
}

// BinaryDirs are where the containerd binary is looked for, in order.
var BinaryDirs = []string{
	"/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/opt/bin",
	"/home/kubernetes/bin",
}

// execTimeout bounds one `containerd --version`.
const execTimeout = 10 * time.Second

// readContainerd finds the binary, runs it for its version and loads the config.
func (r *Reader) readContainerd(ctx context.Context, f *Facts, configPath string) {
	c := &f.Containerd
	for _, d := range BinaryDirs {
		if p := d + "/containerd"; r.exists(p) {
			c.Installed, c.BinaryPath = true, p
			break
		}
	}
	if c.Installed {
		v, err := r.containerdVersion(ctx, c.BinaryPath)
		f.setErr(FactContainerdVersion, err)
		c.Version = v
	}
	if configPath == "" {
		configPath = DefaultContainerdConfig
	}
	cfg, err := containerd.Load(r.Root, configPath)
	f.setErr(FactContainerdConfig, err)
	c.Config = cfg
}

func (r *Reader) containerdVersion(ctx context.Context, bin string) (string, error) {
	if r.Exec == nil {
		return "", errors.New(bin + " --version: no exec function")
	}
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	out, err := r.Exec(ctx, bin, "--version")
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	return containerd.ParseVersion(string(out))
}

// readCDI scans the CDI spec folders and checks the specs against the GPUs and the device
// nodes of this host. With gpus nil (no GPU backend) UUID references are not checked.
func (r *Reader) readCDI(f *Facts, dirs []string, gpus []GPURef) {
	if len(dirs) == 0 {
		dirs = DefaultCDIDirs
	}
	var uuids []string
	if gpus != nil {
		uuids = make([]string, 0, len(gpus))
		for _, g := range gpus {
			uuids = append(uuids, g.UUID)
		}
	}
	f.CDI = cdi.Scan(r.Root, dirs, uuids)
	if len(f.CDI.DirErrors) > 0 {
		f.setErr(FactCDI, errors.New(f.CDI.DirErrors[0]))
	}
}
