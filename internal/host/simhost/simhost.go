// Package simhost is the host of a simulated GPU node: the static facts of a DGX-style
// machine (base.txtar) plus sysfs entries, device nodes and a CDI spec generated from the
// simulated GPUs, so that `--sim` accepts a whole node, not only its GPUs.
package simhost

import (
	"context"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strings"
	"testing/fstest"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/xid"
)

//go:embed base.txtar
var base string

// What the simulated driver shows in /proc.
const (
	modules = `nvidia_uvm 1794048 0 - Live 0x0000000000000000 (POE)
nvidia_drm 118784 0 - Live 0x0000000000000000 (POE)
nvidia_modeset 1355776 1 nvidia_drm, Live 0x0000000000000000 (POE)
nvidia_peermem 16384 0 - Live 0x0000000000000000 (POE)
nvidia 54833152 2 nvidia_uvm,nvidia_peermem,nvidia_modeset, Live 0x0000000000000000 (POE)
ext4 1044480 2 - Live 0x0000000000000000`
	driverVersion = `NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Sep 23 09:19:34 UTC 2025
GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)`
)

// ContainerdVersion is what the simulated `containerd --version` prints.
const ContainerdVersion = "containerd containerd.io 1.7.22 7f7fdf5fed64eb6a7caf99b3e12efcf9d60e311c"

// numaCPUs are the CPU lists of the two simulated NUMA nodes (base.txtar).
var numaCPUs = map[int]string{0: "0-55,112-167", 1: "56-111,168-223"}

// Reader returns a host reader for the simulated node that holds devs.
func Reader(devs []gpu.Device, now func() time.Time) (*host.Reader, error) {
	files, err := parseTxtar(base)
	if err != nil {
		return nil, fmt.Errorf("simulated host: %w", err)
	}
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	var cdi strings.Builder
	cdi.WriteString("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n")
	for i, d := range devs {
		addr := sysfsAddress(d.PCI.BusID)
		dir := "sys/bus/pci/devices/" + addr + "/"
		node := d.NUMANode
		cpus, ok := numaCPUs[node]
		if !ok {
			node, cpus = -1, ""
		}
		put(fsys, dir+"numa_node", fmt.Sprint(node))
		put(fsys, dir+"local_cpulist", cpus)
		put(fsys, dir+"current_link_speed", speed(d.PCI.LinkGen))
		put(fsys, dir+"max_link_speed", speed(d.PCI.LinkGenMax))
		put(fsys, dir+"current_link_width", fmt.Sprint(d.PCI.LinkWidth))
		put(fsys, dir+"max_link_width", fmt.Sprint(d.PCI.LinkWidthMax))
		put(fsys, fmt.Sprintf("dev/nvidia%d", i), "")
		fmt.Fprintf(&cdi, "- name: %s\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia%d\n", d.UUID, i)
	}
	if len(devs) > 0 {
		put(fsys, "sys/class/dmi/id/product_name", dgxName(devs[0].Name))
	}
	if len(devs) > 0 && noNUMA(devs) {
		oneNode(fsys)
	}
	for _, n := range []string{"dev/nvidiactl", "dev/nvidia-uvm", "dev/nvidia-uvm-tools",
		"var/lib/kubelet/device-plugins/kubelet.sock", "var/lib/kubelet/device-plugins/nvidia-gpu.sock",
		"var/lib/kubelet/pod-resources/kubelet.sock", "usr/bin/nvidia-container-runtime"} {
		put(fsys, n, "")
	}
	put(fsys, "proc/modules", modules)
	put(fsys, "proc/driver/nvidia/version", driverVersion)
	cdi.WriteString("containerEdits:\n  deviceNodes:\n  - path: /dev/nvidiactl\n  - path: /dev/nvidia-uvm\n")
	if len(devs) > 0 {
		put(fsys, "var/run/cdi/nvidia.yaml", cdi.String())
	}
	if now == nil {
		now = time.Now
	}
	return &host.Reader{
		Root: fsys,
		Statfs: func(string) (host.StatFS, error) {
			return host.StatFS{TotalBytes: 3840 << 30, FreeBytes: 2900 << 30, TotalInodes: 240 << 20, FreeInodes: 230 << 20}, nil
		},
		Exec: func(_ context.Context, path string, args ...string) ([]byte, error) {
			if strings.HasSuffix(path, "/containerd") && len(args) == 1 && args[0] == "--version" {
				return []byte(ContainerdVersion + "\n"), nil
			}
			return nil, fmt.Errorf("simulated host cannot run %s", path)
		},
		ClockSynced: func() (bool, error) { return true, nil },
		Now:         now,
	}, nil
}

// noNUMA reports whether no GPU has a NUMA node: a virtual machine given its GPU by PCIe
// passthrough (the h200x1 preset), whose host has one NUMA node.
func noNUMA(devs []gpu.Device) bool {
	for _, d := range devs {
		if _, ok := numaCPUs[d.NUMANode]; ok {
			return false
		}
	}
	return true
}

// oneNode makes the simulated host the single-node machine such a VM is: node 0 holds every
// CPU and all the memory.
func oneNode(fsys fstest.MapFS) {
	for _, n := range []string{"online", "possible"} {
		put(fsys, "sys/devices/system/node/"+n, "0")
	}
	put(fsys, "sys/devices/system/node/node0/cpulist", "0-223")
	put(fsys, "sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:       2113523200 kB\nNode 0 MemFree:        2000000000 kB")
	delete(fsys, "sys/devices/system/node/node1/cpulist")
	delete(fsys, "sys/devices/system/node/node1/meminfo")
}

func put(fsys fstest.MapFS, name, data string) {
	fsys[name] = &fstest.MapFile{Data: []byte(data + "\n"), Mode: 0o644}
}

// sysfsAddress turns "00000000:18:00.0" into "0000:18:00.0".
func sysfsAddress(busID string) string {
	return xid.NormalizeBusID(busID) + "." + busID[strings.LastIndexByte(busID, '.')+1:]
}

func speed(gen int) string {
	rates := map[int]string{1: "2.5", 2: "5.0", 3: "8.0", 4: "16.0", 5: "32.0", 6: "64.0"}
	if r, ok := rates[gen]; ok {
		return r + " GT/s PCIe"
	}
	return "Unknown"
}

// parseTxtar reads "-- name --" sections; a name ending in .hex holds hex bytes.
func parseTxtar(s string) (map[string][]byte, error) {
	out := map[string][]byte{}
	var name string
	var body []string
	flush := func() error {
		if name == "" {
			return nil
		}
		data := []byte(strings.Join(body, "\n"))
		if len(body) > 0 {
			data = append(data, '\n')
		}
		if n, ok := strings.CutSuffix(name, ".hex"); ok {
			b, err := hex.DecodeString(strings.Join(strings.Fields(string(data)), ""))
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			name, data = n, b
		}
		out[name] = data
		return nil
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "-- ") && strings.HasSuffix(l, " --") {
			if err := flush(); err != nil {
				return nil, err
			}
			name, body = strings.TrimSuffix(strings.TrimPrefix(l, "-- "), " --"), nil
			continue
		}
		if name != "" {
			body = append(body, l)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// dgxName is the DMI product name of the DGX that carries such GPUs.
func dgxName(gpuName string) string {
	for _, m := range []string{"A100", "H100", "H200", "B200", "B300"} {
		if strings.Contains(gpuName, m) {
			return "DGX" + m
		}
	}
	return "DGX"
}
