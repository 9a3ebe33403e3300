package cli

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/doctor"
	"github.com/gpunode/gpunode/internal/host"
)

type doctorOptions struct {
	facts      factOptions
	output     outputFlags
	metricsURL string
	kubeletDir string
}

func newDoctorCommand() *cobra.Command {
	o := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Find the first broken layer of this GPU node's stack, and why",
		Long: `Walk the GPU node's stack bottom-up, the way to troubleshoot it: a symptom in a
higher layer is almost always caused by a lower one, so doctor stops at the first broken
layer and says the most likely cause and the fix.

  1 driver and GPUs            nvidia module loaded (else: Secure Boot and module signing,
                               kernel mismatch, nouveau, load errors in the kernel log),
                               /proc/driver/nvidia/version, /dev/nvidia*, NVML answers;
                               then every GPU by the health monitor's rules: a lost GPU, a
                               pending row remap or page retirement, an XID since boot that
                               the catalog says needs a GPU reset or more is a broken GPU
                               (named by index, UUID and bus ID, with what to do next)
  2 container toolkit and CDI  containerd has the nvidia runtime or CDI, the runtime binary
                               exists, CDI specs valid and not stale
  3 device plugin              the kubelet's registration socket, a GPU device plugin
                               registered, the pod-resources socket
  4 telemetry                  a metrics endpoint serves DCGM_FI_DEV_* GPU metrics

A broken GPU breaks layer 1 without stopping the walk (the driver and the other GPUs
still work); any other broken probe stops it.

-o json and -o yaml print the report (schema gpunode.dev/doctor/v1, docs/doctor.md).

Exit codes: 0 no layer broken (warnings allowed), 1 a layer is broken, 2 bad usage.`,
		Example: `  gpunode doctor
  gpunode doctor -o json | jq .verdict
  gpunode doctor --sim examples/scenarios/h100x8-xid79.yaml --sim-elapsed 1m
  gpunode doctor --host-root /host --metrics-url http://127.0.0.1:9400/metrics`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	o.facts.addFlags(fs)
	o.output.add(fs, "the report")
	fs.StringVar(&o.metricsURL, "metrics-url", "http://127.0.0.1:9400/metrics", "metrics endpoint to probe for GPU metrics (\"\" to skip; not probed with --sim)")
	fs.StringVar(&o.kubeletDir, "kubelet-dir", host.DefaultKubeletRoot, "the kubelet's root folder on the host")
	return cmd
}

func runDoctor(ctx context.Context, o *doctorOptions, out io.Writer) error {
	format, err := o.output.format()
	if err != nil {
		return err
	}
	f, err := gatherDoctor(ctx, o)
	if err != nil {
		return err
	}
	rep := doctor.Diagnose(*f)
	if format != formatText {
		if err := writeDocument(out, format, rep); err != nil {
			return err
		}
	} else if err := doctorText(out, rep); err != nil {
		return err
	}
	if rep.BrokenLayer != 0 {
		return silentFailure
	}
	return nil
}

// gatherDoctor collects the facts: NVML, the host (through its root), the kernel log and
// the metrics endpoint.
func gatherDoctor(ctx context.Context, o *doctorOptions) (*doctor.Facts, error) {
	g, err := gather(ctx, &o.facts, newProgress(io.Discard, true))
	if err != nil {
		return nil, err
	}
	defer g.Close()
	af := g.Facts
	f := &doctor.Facts{NVMLErr: af.GPUErr, Host: af.Host, HostErr: af.HostErr}
	if af.GPU != nil {
		f.GPUs, f.Snapshot = len(af.GPU.Devices), af.GPU
	}
	root := g.Root
	if root == nil {
		return nil, fmt.Errorf("no host root: %w", af.HostErr)
	}
	f.Modules, f.ModulesErr = loadedModules(root)
	if b, err := fs.ReadFile(root, "proc/driver/nvidia/version"); err == nil {
		f.DriverVersionFile = string(b)
	}
	if ents, err := fs.ReadDir(root, "dev"); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "nvidia") {
				f.DevNodes = append(f.DevNodes, e.Name())
			}
		}
	}
	f.KernelLog, f.KernelLogErr, f.XIDs = g.Kernel, g.KernelErr, af.XIDs
	if af.Host != nil && af.Host.Containerd.Config != nil {
		f.RuntimeBinaryExists = map[string]bool{}
		for _, r := range af.Host.Containerd.Config.Runtimes {
			if r.BinaryName != "" && strings.HasPrefix(r.BinaryName, "/") {
				_, err := fs.Stat(root, strings.TrimPrefix(r.BinaryName, "/"))
				f.RuntimeBinaryExists[r.BinaryName] = err == nil
			}
		}
	}
	kdir := strings.Trim(o.kubeletDir, "/")
	if _, err := fs.Stat(root, kdir); err == nil {
		f.KubeletDir = o.kubeletDir
		_, err := fs.Stat(root, kdir+"/device-plugins/kubelet.sock")
		f.KubeletSocket = err == nil
		if ents, err := fs.ReadDir(root, kdir+"/device-plugins"); err == nil {
			for _, e := range ents {
				n := e.Name()
				if n != "kubelet.sock" && strings.HasSuffix(n, ".sock") && (strings.Contains(n, "nvidia") || strings.Contains(n, "gpu")) {
					f.PluginSockets = append(f.PluginSockets, n)
				}
			}
		}
		_, err = fs.Stat(root, kdir+"/pod-resources/kubelet.sock")
		f.PodResourcesSock = err == nil
	}
	switch {
	case o.facts.gpu.sim != "":
		f.ExporterURL, f.ExporterErr = "", nil
	case o.metricsURL != "":
		f.ExporterURL = o.metricsURL
		f.ExporterHasGPUMetrics, f.ExporterErr = probeMetrics(ctx, o.metricsURL)
	}
	return f, nil
}

// probeMetrics fetches a metrics endpoint and looks for DCGM-style GPU metrics.
func probeMetrics(ctx context.Context, url string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, usageError(fmt.Errorf("--metrics-url %q: %w", url, err))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("HTTP %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return false, err
	}
	return strings.Contains(string(b), "DCGM_FI_DEV_"), nil
}

func doctorText(out io.Writer, rep doctor.Report) error {
	w := &errWriter{w: out}
	w.printf("%-30s %-28s %-8s %s\n", "LAYER", "PROBE", "STATUS", "DETAIL")
	for _, p := range rep.Probes {
		detail := p.Detail
		if p.GPU != nil {
			detail = p.GPU.IDs()
		}
		w.printf("%-30s %-28s %-8s %s\n", fmt.Sprintf("%d %s", p.Layer, doctor.LayerName(p.Layer)), p.Name, strings.ToUpper(string(p.Status)), detail)
		if p.GPU != nil {
			for _, f := range p.Findings {
				w.printf("%-30s %-28s %-8s %s: %s\n", "", "", "", f.Cause, f.Summary)
			}
		}
		if p.Fix != "" && (p.Status == doctor.Warn || p.GPU != nil) {
			w.printf("%-30s %-28s %-8s fix: %s\n", "", "", "", p.Fix)
		}
	}
	w.printf("\n%s\n", capitalize(rep.Verdict))
	if rep.Cause != "" {
		w.printf("Most likely cause: %s\nFix: %s\n", rep.Cause, rep.Fix)
	}
	return w.err
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// loadedModules returns /proc/modules, or on a kernel without it (modules built in, or a
// container without /proc/modules) one line per /sys/module entry.
func loadedModules(root fs.FS) (string, error) {
	b, err := fs.ReadFile(root, "proc/modules")
	if err == nil {
		return string(b), nil
	}
	ents, err2 := fs.ReadDir(root, "sys/module")
	if err2 != nil {
		return "", fmt.Errorf("read /proc/modules: %w; list /sys/module: %w", err, err2)
	}
	var sb strings.Builder
	for _, e := range ents {
		sb.WriteString(e.Name() + " 0 0 - Live\n")
	}
	return sb.String(), nil
}
