package host

import (
	"errors"
	"io/fs"
	"time"

	"github.com/gpunode/gpunode/internal/host/cdi"
	"github.com/gpunode/gpunode/internal/host/redact"
)

// Facts is everything the host tells about itself. A fact listed in Errors is not valid in
// the struct; per-GPU, per-disk and per-CDI-file failures are recorded beside those items.
type Facts struct {
	// Time is when the facts were read.
	Time       time.Time          `json:"time"`
	OS         OSRelease          `json:"os"`
	Kernel     Kernel             `json:"kernel"`
	Boot       Boot               `json:"boot"`
	Cgroup     Cgroup             `json:"cgroup"`
	SecureBoot SecureBoot         `json:"secureBoot"`
	Platform   Platform           `json:"platform"`
	CPU        CPU                `json:"cpu"`
	NUMANodes  []NUMANode         `json:"numaNodes,omitempty"`
	Memory     Memory             `json:"memory"`
	SHM        SHM                `json:"shm"`
	Disks      []Disk             `json:"disks,omitempty"`
	TimeSync   TimeSync           `json:"timeSync"`
	GPUs       []GPUHost          `json:"gpus,omitempty"`
	Containerd Containerd         `json:"containerd"`
	CDI        cdi.Report         `json:"cdi"`
	Kubelet    Kubelet            `json:"kubelet"`
	Errors     map[Fact]FactError `json:"errors,omitempty"`
}

// Fact names one host fact, for Facts.Errors and GPUHost.Errors.
type Fact string

// The host facts. Each check names the facts it depends on.
const (
	FactOSRelease         Fact = "os"
	FactKernelRelease     Fact = "kernel.release"
	FactKernelVersion     Fact = "kernel.version"
	FactKernelTainted     Fact = "kernel.tainted"
	FactCmdline           Fact = "boot.cmdline"
	FactIOMMUUnits        Fact = "boot.iommuUnits"
	FactCgroup            Fact = "cgroup"
	FactSecureBoot        Fact = "secureBoot"
	FactSysVendor         Fact = "platform.sysVendor"
	FactProductName       Fact = "platform.productName"
	FactProductSerial     Fact = "platform.productSerial"
	FactBIOSVersion       Fact = "platform.biosVersion"
	FactBIOSDate          Fact = "platform.biosDate"
	FactCPUOnline         Fact = "cpu.online"
	FactCPUInfo           Fact = "cpu.info"
	FactSMT               Fact = "cpu.smt"
	FactNUMA              Fact = "numa"
	FactMemory            Fact = "memory"
	FactMounts            Fact = "mounts"
	FactSHM               Fact = "shm"
	FactTimeSync          Fact = "timeSync"
	FactContainerdVersion Fact = "containerd.version"
	FactContainerdConfig  Fact = "containerd.config"
	FactCDI               Fact = "cdi"
	FactKubelet           Fact = "kubelet"
)

// Per-GPU facts, for GPUHost.Errors.
const (
	FactGPUAddress  Fact = "address"
	FactGPUNUMA     Fact = "numa"
	FactGPULocalCPU Fact = "localCpus"
	FactGPULink     Fact = "pcieLink"
)

// FactError explains why a fact is missing.
type FactError struct {
	// Missing is true when the file (or folder) does not exist on this host: the platform
	// does not have the fact (a VM without DMI, a host without EFI), so a check may skip.
	// False when reading or parsing failed (a check then fails).
	Missing bool   `json:"missing,omitempty"`
	Message string `json:"message"`
}

// Error implements error.
func (e FactError) Error() string { return e.Message }

// newFactError converts a read or parse error, which names its path, into a FactError,
// with what it quotes of the file left out (redact.Quoted).
func newFactError(err error) FactError {
	return FactError{Missing: errors.Is(err, fs.ErrNotExist), Message: redact.Quoted(err.Error())}
}

// Err returns the error recorded for a fact, or nil when the fact is valid.
func (f *Facts) Err(k Fact) *FactError {
	if e, ok := f.Errors[k]; ok {
		return &e
	}
	return nil
}

// setErr records that a fact could not be read; a nil err records nothing.
func (f *Facts) setErr(k Fact, err error) {
	if err == nil {
		return
	}
	if f.Errors == nil {
		f.Errors = map[Fact]FactError{}
	}
	f.Errors[k] = newFactError(err)
}

// OSRelease is the distribution from /etc/os-release.
type OSRelease struct {
	// ID such as "ubuntu", "rhel", "cos".
	ID string `json:"id,omitempty"`
	// VersionID such as "22.04".
	VersionID  string `json:"versionId,omitempty"`
	PrettyName string `json:"prettyName,omitempty"`
	// Codename (VERSION_CODENAME) such as "jammy".
	Codename string `json:"codename,omitempty"`
}

// Kernel is the running kernel.
type Kernel struct {
	// Release is /proc/sys/kernel/osrelease, e.g. "5.15.0-113-generic".
	Release string `json:"release,omitempty"`
	// Version is the full /proc/version line (compiler and build date).
	Version string `json:"version,omitempty"`
	// Tainted is /proc/sys/kernel/tainted: bit 0 (P) proprietary module, bit 12 (O)
	// out-of-tree module, bit 13 (E) unsigned module.
	Tainted uint64 `json:"tainted"`
}

// Cgroup is the control-group hierarchy the host booted with.
type Cgroup struct {
	// Version is 2 for the unified hierarchy, 1 for legacy or hybrid, 0 when unknown.
	Version int `json:"version"`
	// Mode is "unified", "hybrid" (v1 with a v2 mount at /sys/fs/cgroup/unified) or "legacy".
	Mode string `json:"mode,omitempty"`
	// Controllers enabled at the v2 root (cgroup.controllers).
	Controllers []string `json:"controllers,omitempty"`
}
