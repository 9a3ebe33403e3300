// Package host reads the facts of a GPU node's host: distribution, kernel, boot parameters,
// cgroups, firmware, CPU and NUMA topology, memory, disks, time sync, each GPU's PCI
// placement and link, containerd, CDI specs and the kubelet's reservations.
//
// Every file is read through Reader.Root, an fs.FS standing for the host's "/", so tests run
// against testdata trees and nothing reads global paths. The few facts that are not files
// (filesystem capacity, a binary's version, the kernel's clock state) come through injected
// functions. A fact that cannot be read never fails Read: it is recorded in Facts.Errors (or
// beside the GPU, disk or CDI file it belongs to) with the path and the reason.
package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/host/rootfs"
)

// Reader reads host facts. Only Root is required; a nil function leaves the facts that
// need it recorded as errors.
type Reader struct {
	// Root is the host's "/".
	Root fs.FS
	// Statfs returns the capacity of the filesystem that holds path (an absolute host path).
	Statfs func(path string) (StatFS, error)
	// Exec runs the host binary at path (an absolute host path) and returns its output.
	Exec func(ctx context.Context, path string, args ...string) ([]byte, error)
	// ClockSynced asks the kernel whether the system clock is synchronized (adjtimex).
	ClockSynced func() (bool, error)
	// Now stamps Facts.Time; nil means time.Now.
	Now func() time.Time
}

// NewReader returns a Reader of the host mounted at rootDir ("/" when running on the host,
// e.g. "/host" in a container that mounts it), with the real statfs, exec and adjtimex.
func NewReader(rootDir string) *Reader {
	return &Reader{
		Root:        rootfs.Dir(rootDir),
		Statfs:      realStatfs(rootDir),
		Exec:        realExec(rootDir),
		ClockSynced: realClockSynced,
		Now:         time.Now,
	}
}

// Default host paths.
const (
	DefaultContainerdRoot   = "/var/lib/containerd"
	DefaultContainerdConfig = "/etc/containerd/config.toml"
	DefaultKubeletRoot      = "/var/lib/kubelet"
)

// DefaultKubeletConfigs are tried in order when Options.KubeletConfig is empty: kubeadm,
// EKS, then the common /etc/kubernetes location and GKE.
var DefaultKubeletConfigs = []string{
	"/var/lib/kubelet/config.yaml",
	"/etc/kubernetes/kubelet/kubelet-config.json",
	"/etc/kubernetes/kubelet-config.yaml",
	"/home/kubernetes/kubelet-config.yaml",
}

// DefaultCDIDirs are the CDI spec folders, in increasing priority (as the CDI library).
var DefaultCDIDirs = []string{"/etc/cdi", "/var/run/cdi"}

// Options say where the configurable things live; zero values take the defaults.
type Options struct {
	// ContainerdRoot is containerd's data folder; default: the config's "root", else
	// DefaultContainerdRoot.
	ContainerdRoot string
	// KubeletRoot is the kubelet's folder (nodefs); default DefaultKubeletRoot.
	KubeletRoot string
	// CacheDirs are local model/data cache folders whose free space is reported.
	CacheDirs []string
	// KubeletConfig is the kubelet config file; default: the first of DefaultKubeletConfigs
	// that exists.
	KubeletConfig string
	// ContainerdConfig is containerd's config file; default DefaultContainerdConfig.
	ContainerdConfig string
	// CDIDirs are the CDI spec folders; default DefaultCDIDirs.
	CDIDirs []string
}

// GPURef names one GPU whose host-side facts (NUMA, local CPUs, PCIe link) are read.
type GPURef struct {
	UUID string `json:"uuid"`
	// BusID in NVML's form, "00000000:18:00.0" (the sysfs form "0000:18:00.0" is accepted).
	BusID string `json:"busId"`
}

// GPURefs returns the references of a backend's devices.
func GPURefs(devs []gpu.Device) []GPURef {
	refs := make([]GPURef, 0, len(devs))
	for _, d := range devs {
		refs = append(refs, GPURef{UUID: d.UUID, BusID: d.PCI.BusID})
	}
	return refs
}

// Read reads every host fact. gpus may be nil (no GPU backend): then per-GPU facts are
// absent and CDI UUID references are not checked. Read fails only when it has no root or
// ctx is done; every other failure is recorded inside the facts.
func (r *Reader) Read(ctx context.Context, opts Options, gpus []GPURef) (*Facts, error) {
	if r.Root == nil {
		return nil, errors.New("host reader: no root filesystem")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read host facts: %w", err)
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	f := &Facts{Time: now()}
	mounts, table := r.readMounts(f)
	r.readOS(f, mounts)
	r.readBoot(f)
	r.readFirmware(f)
	r.readCPU(f)
	r.readMemory(f, mounts, table)
	f.GPUs = r.readGPUs(gpus)
	r.readTimeSync(f)
	r.readContainerd(ctx, f, opts.ContainerdConfig)
	r.readCDI(f, opts.CDIDirs, gpus)
	r.readKubelet(f, opts.KubeletConfig)
	f.Disks = r.readDisks(opts, f.Containerd, mounts)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read host facts: %w", err)
	}
	return f, nil
}

// readFile reads a host file; the error names the host path.
func (r *Reader) readFile(p string) ([]byte, error) {
	data, err := fs.ReadFile(r.Root, rootfs.Path(p))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, rootfs.Inner(err))
	}
	return data, nil
}

// readString reads a host file and trims surrounding white space.
func (r *Reader) readString(p string) (string, error) {
	data, err := r.readFile(p)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}

// readDir lists a host folder.
func (r *Reader) readDir(p string) ([]fs.DirEntry, error) {
	ents, err := fs.ReadDir(r.Root, rootfs.Path(p))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p, rootfs.Inner(err))
	}
	return ents, nil
}

// stat checks that a host path exists (file or folder); the error names the path.
func (r *Reader) stat(p string) error {
	if _, err := fs.Stat(r.Root, rootfs.Path(p)); err != nil {
		return fmt.Errorf("stat %s: %w", p, rootfs.Inner(err))
	}
	return nil
}

// exists reports whether a host path exists (file or folder).
func (r *Reader) exists(p string) bool { return r.stat(p) == nil }
