package cli

import (
	"context"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/pflag"

	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/simhost"
	"github.com/gpunode/gpunode/internal/platform"
)

// factOptions say where the facts come from.
type factOptions struct {
	gpu       gpuOptions
	node      string
	hostRoot  string
	cacheDirs []string
	kernelLog string
	// trustUserKmsg accepts /dev/kmsg records written from user space (tests only: any
	// process allowed to write /dev/kmsg could otherwise fake a fault).
	trustUserKmsg bool
}

const defaultKernelLog = "/dev/kmsg"

func (o *factOptions) addFlags(fs *pflag.FlagSet) {
	o.gpu.addFlags(fs)
	fs.StringVar(&o.node, "node-name", "", "node name in the output (default: $NODE_NAME, else the hostname)")
	fs.StringVar(&o.hostRoot, "host-root", "", "where the host's root filesystem is mounted (default \"/\", \"/host\" in a container; with --sim: a simulated DGX-style host)")
	fs.StringSliceVar(&o.cacheDirs, "cache-dir", nil, "local model/data cache folder whose free space to check (repeatable)")
	fs.StringVar(&o.kernelLog, "kernel-log", defaultKernelLog, "kernel log to scan for XIDs: /dev/kmsg, a saved kmsg dump, dmesg/journald text, or \"none\"")
	fs.BoolVar(&o.trustUserKmsg, "kmsg-trust-user-records", false, "also trust kernel-log records written from user space (testing only)")
	_ = fs.MarkHidden("kmsg-trust-user-records")
}

func (o *factOptions) nodeName() string {
	if o.node != "" {
		return o.node
	}
	if n := os.Getenv("NODE_NAME"); n != "" {
		return n
	}
	if h, err := os.Hostname(); err == nil {
		return h
	}
	return "unknown"
}

// gathered is what gather read: the facts the checks look at, and what other commands
// need from the same read (the host's root, the kernel log's lines).
type gathered struct {
	Facts *accept.Facts
	// Root is the host root the facts were read under (nil when no host reader).
	Root fs.FS
	// Kernel is the kernel log, line by line; KernelErr says why it could not be read.
	Kernel    []string
	KernelErr error
	// Close releases the GPU backend.
	Close func()
	// Platform is the platform the facts were read from (nil when no GPU backend opened),
	// for commands that go on to use it (accept's performance and frameworks layers).
	Platform *platform.Platform
}

// gather reads every fact once: GPUs, then the host (which needs the GPUs' bus ids), then
// the kernel log. Only a usage error (a bad scenario or log file) stops it; anything else
// becomes a fact that a check reports. On error nothing is left open.
func gather(ctx context.Context, o *factOptions, p *progress) (*gathered, error) {
	f := &accept.Facts{Node: o.nodeName()}
	g := &gathered{Facts: f, Close: func() {}}

	p.step("reading GPUs")
	plat, err := o.openPlatform()
	if err != nil {
		if exitCode(err) == ExitUsage {
			return nil, err
		}
		f.GPUErr = err
	} else {
		g.Close = func() { _ = plat.Close() }
		g.Platform = plat
		f.GPU, f.GPUErr = plat.Backend.Snapshot(ctx)
	}
	p.stepDone("GPUs", f.GPUErr)

	p.step("reading host facts")
	var refs []host.GPURef
	if f.GPU != nil {
		refs = host.GPURefs(f.GPU.Devices)
	}
	hr, err := o.hostReader(f)
	if err != nil {
		f.HostErr = err
	} else {
		g.Root = hr.Root
		f.Host, f.HostErr = hr.Read(ctx, host.Options{CacheDirs: o.cacheDirs}, refs)
	}
	p.stepDone("host facts", f.HostErr)

	p.step("reading the kernel log")
	g.Kernel, g.KernelErr = o.kernelMessages(ctx, plat)
	if exitCode(g.KernelErr) == ExitUsage {
		g.Close()
		return nil, g.KernelErr
	}
	f.XIDs, f.KernelLogErr = scanXIDs(g.Kernel), g.KernelErr
	p.stepDone(fmt.Sprintf("kernel log (%d XID events)", len(f.XIDs)), f.KernelLogErr)
	return g, nil
}

// hostReader reads the real host, or with --sim and no --host-root a simulated one that
// matches the simulated GPUs.
func (o *factOptions) hostReader(f *accept.Facts) (*host.Reader, error) {
	if o.hostRoot == "" && o.gpu.sim != "" && f.GPU != nil {
		return simhost.Reader(f.GPU.Devices, nil)
	}
	root := o.hostRoot
	if root == "" {
		root = "/"
	}
	return host.NewReader(root), nil
}
