package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/simhost"
	"github.com/gpunode/gpunode/internal/kmsg"
	"github.com/gpunode/gpunode/internal/xid"
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

// gather reads every fact: GPUs, then the host (which needs the GPUs' bus ids), then the
// kernel log. Only a usage error (a bad scenario file) stops it; anything else becomes a
// fact that a check reports.
func gather(ctx context.Context, o *factOptions, p *progress) (*accept.Facts, func(), error) {
	f := &accept.Facts{Node: o.nodeName()}
	closeFn := func() {}

	p.step("reading GPUs")
	backend, err := o.gpu.openBackend()
	if err != nil {
		if exitCode(err) == ExitUsage {
			return nil, closeFn, err
		}
		f.GPUErr = err
	} else {
		closeFn = func() { _ = backend.Close() }
		f.GPU, f.GPUErr = backend.Snapshot(ctx)
	}
	p.stepDone("GPUs", f.GPUErr)

	p.step("reading host facts")
	var refs []host.GPURef
	if f.GPU != nil {
		refs = host.GPURefs(f.GPU.Devices)
	}
	f.Host, f.HostErr = o.hostReader(f).Read(ctx, host.Options{CacheDirs: o.cacheDirs}, refs)
	p.stepDone("host facts", f.HostErr)

	p.step("reading the kernel log")
	f.XIDs, f.KernelLogErr = o.readXIDs(ctx, backend)
	if exitCode(f.KernelLogErr) == ExitUsage {
		return nil, closeFn, f.KernelLogErr
	}
	p.stepDone(fmt.Sprintf("kernel log (%d XID events)", len(f.XIDs)), f.KernelLogErr)
	return f, closeFn, nil
}

// readXIDs scans the kernel log. Simulated GPUs bring their own kernel log.
func (o *factOptions) readXIDs(ctx context.Context, b gpu.Backend) ([]xid.Event, error) {
	if sb, ok := b.(*sim.Backend); ok && o.kernelLog == defaultKernelLog {
		var out []xid.Event
		for _, l := range sb.KernelLog() {
			if ev, ok := xid.ParseLine(l.Text); ok {
				out = append(out, ev)
			}
		}
		return out, nil
	}
	switch o.kernelLog {
	case "none", "":
		return nil, fmt.Errorf("not read (--kernel-log none)")
	}
	st, err := os.Stat(o.kernelLog)
	if err != nil {
		if o.kernelLog != defaultKernelLog {
			// A file the user named that is not there is bad input, not a skipped check.
			return nil, usageError(fmt.Errorf("--kernel-log %s: %w", o.kernelLog, err))
		}
		return nil, fmt.Errorf("kernel log %s: %w", o.kernelLog, err)
	}
	if st.Mode()&os.ModeCharDevice != 0 {
		recs, err := kmsg.ReadAll(ctx, o.kernelLog)
		if err != nil {
			return nil, err
		}
		var out []xid.Event
		for _, r := range recs {
			if !r.FromKernel() && !o.trustUserKmsg {
				continue
			}
			if ev, ok := xid.ParseLine(r.Message); ok {
				out = append(out, ev)
			}
		}
		return out, nil
	}
	return readTextLog(o.kernelLog)
}

// readTextLog scans a saved log: kmsg records, dmesg, dmesg -T, journald or syslog text.
func readTextLog(path string) ([]xid.Event, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kernel log %s: %w", path, err)
	}
	defer func() { _ = fh.Close() }()
	var out []xid.Event
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "NVRM") {
			continue
		}
		if ev, ok := xid.ParseLine(line); ok {
			out = append(out, ev)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("kernel log %s: %w", path, err)
	}
	return out, nil
}

// hostReader reads the real host, or with --sim and no --host-root a simulated one that
// matches the simulated GPUs.
func (o *factOptions) hostReader(f *accept.Facts) hostReaderI {
	if o.hostRoot == "" && o.gpu.sim != "" && f.GPU != nil {
		r, err := simhost.Reader(f.GPU.Devices, nil)
		if err == nil {
			return r
		}
		return failingReader{err}
	}
	root := o.hostRoot
	if root == "" {
		root = "/"
	}
	return host.NewReader(root)
}

type hostReaderI interface {
	Read(ctx context.Context, opts host.Options, gpus []host.GPURef) (*host.Facts, error)
}

type failingReader struct{ err error }

func (r failingReader) Read(context.Context, host.Options, []host.GPURef) (*host.Facts, error) {
	return nil, r.err
}
