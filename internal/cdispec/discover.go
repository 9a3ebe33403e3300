// Package cdispec generates the Container Device Interface spec for a node's GPUs, so that a
// container runtime with CDI enabled (containerd ≥ 1.7, CRI-O) can inject a GPU named
// nvidia.com/gpu=<uuid> without the NVIDIA container runtime hook.
//
// What is discovered, and how (all under an injected host root, an fs.FS):
//
//   - device nodes: /dev/nvidia<minor> for each GPU, the minor read from the driver's
//     /proc/driver/nvidia/gpus/<bus id>/information ("Device Minor:"); the control nodes
//     /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools and /dev/nvidia-modeset where
//     present (nvidiactl is required);
//
//   - driver libraries: the user-space libraries of the compute stack (the list nvidia-ctk
//     uses for compute: libcuda, libnvidia-ml, libnvidia-ptxjitcompiler, ...) found as
//     <name>.<driver version> in the usual library folders, with their SONAME links
//     (libcuda.so.1 ...) beside them; libcuda and libnvidia-ml are required;
//
//   - binaries: nvidia-smi, nvidia-debugdump, nvidia-persistenced and the MPS control
//     daemon and server, where present;
//
//   - the ld.so cache hook: when the host has nvidia-cdi-hook (NVIDIA Container Toolkit ≥
//     1.17), a createContainer hook runs "nvidia-cdi-hook update-ldcache" for the library
//     folders, as nvidia-ctk's specs do. Without it the libraries are still mounted at their
//     host paths with their SONAME links, which the loader finds in the standard folders.
//
//   - MIG devices: each one's GPU instance and compute instance access nodes,
//     /dev/nvidia-caps/nvidia-cap<N>, the minors N read from the driver's
//     /proc/driver/nvidia-caps/mig-minors ("gpu<minor>/gi<id>/access N",
//     "gpu<minor>/gi<id>/ci<id>/access N"), beside the parent GPU's node.
//
// Not generated: graphics and display libraries.
//
// Simulated GPUs (the sim backend) have nothing to discover: SimulatedHost gives each one
// the node /dev/nvidia<index> backed by the host's /dev/null (a CDI hostPath) and an
// environment variable naming its UUID, so CDI injection is exercised end to end on a node
// without GPUs.
package cdispec

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpunode/gpunode/internal/gpu"
)

// libDirs are the standard folders searched for driver libraries, in order (searchDirs adds
// the dynamic linker's configured ones).
var libDirs = []string{
	"usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "usr/lib64", "usr/lib",
	"lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu", "lib64",
}

// computeLibs are the driver's compute libraries (nvidia-ctk's compute list); the first two
// are required.
var computeLibs = []string{
	"libcuda.so", "libnvidia-ml.so", "libcudadebugger.so", "libnvidia-cfg.so",
	"libnvidia-gpucomp.so", "libnvidia-nvvm.so", "libnvidia-opencl.so",
	"libnvidia-ptxjitcompiler.so", "libnvidia-allocator.so", "libnvidia-pkcs11.so",
	"libnvidia-pkcs11-openssl3.so",
}

var requiredLibs = []string{"libcuda.so", "libnvidia-ml.so"}

// binDirs and binaries are the driver's utilities mounted into the container.
var (
	binDirs  = []string{"usr/bin", "usr/sbin", "bin", "sbin", "usr/local/bin"}
	binaries = []string{"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"}
)

// controlNodes are the driver's device nodes shared by all GPUs; the first is required.
var controlNodes = []string{"dev/nvidiactl", "dev/nvidia-uvm", "dev/nvidia-uvm-tools", "dev/nvidia-modeset"}

// cdiHook is NVIDIA's CDI hook binary.
const cdiHook = "usr/bin/nvidia-cdi-hook"

// Host is what was found on the host; every path is absolute on the host.
type Host struct {
	// GPUNodes maps a GPU's UUID to its device node, /dev/nvidia<minor>.
	GPUNodes map[string]string
	// MIGNodes maps a MIG device's UUID to its capability nodes (GPU instance, compute
	// instance access), /dev/nvidia-caps/nvidia-cap<N>.
	MIGNodes map[string][]string
	// ControlNodes are the shared device nodes found.
	ControlNodes []string
	// Libraries are the library files and SONAME links found; LibraryDirs their folders.
	Libraries   []string
	LibraryDirs []string
	// Binaries are the utilities found.
	Binaries []string
	// Hook is nvidia-cdi-hook's path, "" when the host has none.
	Hook string
	// HostPaths maps a device node (its path in the container) to the host device behind
	// it when that is another one; absent: the node is the host's own (Discover's). The
	// simulated GPUs' nodes are all SimulatedHostPath.
	HostPaths map[string]string
	// Env are environment variables a device (by GPU or MIG device UUID) sets in the
	// container, beside its nodes (SimulatedHost's).
	Env map[string][]string
}

// node is the spec's device node for a node path.
func (h *Host) node(p string) *specs.DeviceNode {
	return &specs.DeviceNode{Path: p, HostPath: h.HostPaths[p]}
}

// Discover finds the device nodes, libraries and binaries for devs under root, for the
// driver version the GPU backend reported. Errors name the path that is missing.
func Discover(root fs.FS, driverVersion string, devs []gpu.Device) (*Host, error) {
	if driverVersion == "" {
		return nil, errors.New("cdi spec: the driver version is unknown; the libraries cannot be matched")
	}
	h := &Host{GPUNodes: map[string]string{}, MIGNodes: map[string][]string{}}
	var migMinors map[string]int
	for _, d := range devs {
		minor, err := deviceMinor(root, d.PCI.BusID)
		if err != nil {
			return nil, fmt.Errorf("cdi spec: GPU %d (%s): %w", d.Index, d.UUID, err)
		}
		node := fmt.Sprintf("dev/nvidia%d", minor)
		if _, err := fs.Stat(root, node); err != nil {
			return nil, fmt.Errorf("cdi spec: GPU %d (%s): device node /%s: %w", d.Index, d.UUID, node, err)
		}
		h.GPUNodes[d.UUID] = "/" + node
		if len(d.MIGDevices) == 0 {
			continue
		}
		if migMinors == nil {
			if migMinors, err = readMIGMinors(root); err != nil {
				return nil, fmt.Errorf("cdi spec: GPU %d (%s) has MIG devices: %w", d.Index, d.UUID, err)
			}
		}
		for _, m := range d.MIGDevices {
			nodes, err := migNodes(root, migMinors, minor, m)
			if err != nil {
				return nil, fmt.Errorf("cdi spec: GPU %d MIG device %d (%s): %w", d.Index, m.Index, m.UUID, err)
			}
			h.MIGNodes[m.UUID] = nodes
		}
	}
	for i, n := range controlNodes {
		if _, err := fs.Stat(root, n); err != nil {
			if i == 0 {
				return nil, fmt.Errorf("cdi spec: driver control node /%s: %w", n, err)
			}
			continue
		}
		h.ControlNodes = append(h.ControlNodes, "/"+n)
	}
	if err := h.findLibraries(root, driverVersion); err != nil {
		return nil, err
	}
	for _, b := range binaries {
		for _, dir := range binDirs {
			p := path.Join(dir, b)
			if fi, err := fs.Stat(root, p); err == nil && fi.Mode().IsRegular() {
				h.Binaries = append(h.Binaries, "/"+p)
				break
			}
		}
	}
	if fi, err := fs.Stat(root, cdiHook); err == nil && fi.Mode().IsRegular() {
		h.Hook = "/" + cdiHook
	}
	return h, nil
}

// findLibraries finds each library as <name>.<version> in the first folder that has it,
// with the SONAME links (<name>.<digits>) beside it.
func (h *Host) findLibraries(root fs.FS, version string) error {
	dirs := searchDirs(root)
	for _, lib := range computeLibs {
		found := false
		for _, dir := range dirs {
			file := path.Join(dir, lib+"."+version)
			if fi, err := fs.Stat(root, file); err != nil || !fi.Mode().IsRegular() {
				continue
			}
			found = true
			h.Libraries = append(h.Libraries, "/"+file)
			h.Libraries = append(h.Libraries, sonameLinks(root, dir, lib, version)...)
			if !slices.Contains(h.LibraryDirs, "/"+dir) {
				h.LibraryDirs = append(h.LibraryDirs, "/"+dir)
			}
			break
		}
		if !found && slices.Contains(requiredLibs, lib) {
			return fmt.Errorf("cdi spec: driver library %s.%s not found in %v under the host root", lib, version, dirs)
		}
	}
	return nil
}

// sonameLinks are the symbolic links <name>.<n> (n a number other than the version) in dir.
func sonameLinks(root fs.FS, dir, lib, version string) []string {
	entries, err := fs.ReadDir(root, dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), lib+".")
		if !ok || suffix == version || e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		if _, err := strconv.Atoi(suffix); err == nil {
			out = append(out, "/"+path.Join(dir, e.Name()))
		}
	}
	return out
}

// deviceMinor reads "Device Minor:" from the driver's information file of a GPU.
func deviceMinor(root fs.FS, busID string) (int, error) {
	if busID == "" {
		return 0, errors.New("no PCI bus id: the device node cannot be found")
	}
	p := "proc/driver/nvidia/gpus/" + procBusID(busID) + "/information"
	f, err := root.Open(p)
	if err != nil {
		return 0, fmt.Errorf("device minor from /%s: %w", p, err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Device Minor:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				return 0, fmt.Errorf("/%s: bad Device Minor %q", p, strings.TrimSpace(v))
			}
			return n, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read /%s: %w", p, err)
	}
	return 0, fmt.Errorf("/%s has no Device Minor line", p)
}

// procBusID turns NVML's "00000000:18:00.0" into procfs's "0000:18:00.0".
func procBusID(id string) string {
	id = strings.ToLower(id)
	if dom, rest, ok := strings.Cut(id, ":"); ok && len(dom) > 4 {
		id = dom[len(dom)-4:] + ":" + rest
	}
	return id
}
