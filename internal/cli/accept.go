package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/buildinfo"
	"github.com/gpunode/gpunode/internal/nodepolicy"
	"github.com/gpunode/gpunode/internal/record"
)

type acceptOptions struct {
	facts       factOptions
	policyFile  string
	class       string
	expectGPUs  int
	expectModel string
	layers      []string
	format      string
	outputDir   string
	quiet       bool
	layerOpts   layerOptions
}

func newAcceptCommand() *cobra.Command {
	o := &acceptOptions{}
	cmd := &cobra.Command{
		Use:   "accept",
		Short: "Run node-local acceptance and write an acceptance record",
		Long: `Run the node-local acceptance layers against a policy and report every check.

Layers:
  L0 host      what the node image pins: OS, kernel, boot parameters (IOMMU), cgroups,
               Secure Boot, NUMA and GPU locality, SMT, /dev/shm, hugepages, disk space and
               inodes, time sync, containerd and its nvidia runtime, CDI specs, kubelet
               reservations
  L1 hardware  GPU count and model, memory, ECC mode and errors, row remapping, retired
               pages, temperature, power, slowdown reasons, PCIe link and replays, NVLink,
               fabric, persistence mode, MIG mode, driver and CUDA versions, XIDs since
               boot, the driver's recovery action

Run only when named (--layers), as they put load on the GPUs (docs/performance.md):
  L4 performance  HBM copy bandwidth and FP32 throughput of every GPU, measured through
               the CUDA driver, against its model's baseline (built-in from vendor
               specs, or --baseline FILE): below 90% fails
               (thresholds.minPerformancePercent). FP64 and PCIe where measured.
  L5 frameworks   an embedded PyTorch script run with python3: allocation and a checked
               matmul on every GPU, an NCCL all-reduce across the GPUs, a checkpoint
               save/restore round trip. No python3 or no torch: the layer skips.

The policy is a GPUNodePolicy (--policy FILE: the same YAML that kubectl applies, see
docs/policy.md); its thresholds are the ones the agent's health monitor judges by. Fields a
node-local run does not use (node selection, remediation, the controller's layers, the
monitor's rates) are named on stderr.

Each check passes, warns, fails or skips (a skip always says why). The node passes when
no check fails. The record follows the node acceptance template field by field.

Exit codes: 0 passed, 1 failed, 2 bad usage or bad input (policy, baseline or scenario file).`,
		Example: `  # on a GPU node
  gpunode accept
  # anywhere, on 8 simulated H100s, writing the record as JSON and Markdown
  gpunode accept --sim h100x8 --output-dir ./records
  # with a GPUNodePolicy, JSON on stdout
  gpunode accept --policy examples/policies/h100x8.yaml --format json
  # a policy of several accelerator classes, for this node's class
  gpunode accept --policy fleet.yaml --class h100-80g
  # performance against the baseline, and PyTorch on every GPU
  gpunode accept --layers performance,frameworks -o json
  # with this fleet's own expected values (docs/performance.md)
  gpunode accept --layers performance --baseline baselines.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAccept(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	o.facts.addFlags(fs)
	fs.StringVar(&o.policyFile, "policy", "", "GPUNodePolicy YAML, as kubectl applies it (default: the built-in policy; see docs/policy.md)")
	fs.StringVar(&o.class, "class", "", "accelerator class whose expectation the policy applies (default: the policy's only class)")
	fs.IntVar(&o.expectGPUs, "expect-gpus", 0, "expected GPU count (overrides the class's gpus)")
	fs.StringVar(&o.expectModel, "expect-model", "", "expected GPU model as the driver names it, e.g. \"NVIDIA H100 80GB HBM3\" (overrides the class's model)")
	fs.StringSliceVar(&o.layers, "layers", nil, "layers to run: host (L0), hardware (L1), performance (L4), frameworks (L5) (default: the policy's, else L0 and L1)")
	fs.StringVar(&o.layerOpts.baselineFile, "baseline", "", "performance baseline YAML over the built-in one (docs/performance.md)")
	fs.StringVar(&o.layerOpts.python, "python", "python3", "Python interpreter for the frameworks layer")
	fs.DurationVar(&o.layerOpts.frameworksTimeout, "frameworks-timeout", 5*time.Minute, "time limit of the frameworks layer's PyTorch script")
	fs.StringVarP(&o.format, "format", "o", "table", "output format: table (or text), json, yaml or markdown; json and yaml print the record (schema gpunode.dev/record/v1)")
	fs.StringVar(&o.outputDir, "output-dir", "", "also write the record as <id>.json and <id>.md into this folder")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}

// policy is the effective policy: the built-in one, or the GPUNodePolicy of --policy
// converted for --class (nodepolicy.AcceptPolicy, as the agent converts the cluster's), with
// the flags over it. What the file sets that this run does not use is named on errOut.
func (o *acceptOptions) policy(errOut io.Writer) (accept.Policy, record.PolicyRef, error) {
	p := accept.DefaultPolicy()
	ref := record.PolicyRef{Name: p.Name, Source: "built-in"}
	if o.class != "" && o.policyFile == "" {
		return p, ref, usageErrorf("--class %s: only with --policy (the built-in policy has no classes)", o.class)
	}
	if o.policyFile != "" {
		gp, err := nodepolicy.Load(o.policyFile)
		if err != nil {
			return p, ref, usageError(err)
		}
		class, err := nodepolicy.ClassFor(gp, o.class)
		if err != nil {
			return p, ref, usageErrorf("policy %s: %w", o.policyFile, err)
		}
		p, _ = nodepolicy.AcceptPolicy(gp, class)
		ref = record.PolicyRef{Name: p.Name, Source: o.policyFile}
		for _, u := range nodepolicy.Unused(gp) {
			fmt.Fprintf(errOut, "policy %s: not used by a node-local run: %s\n", o.policyFile, u)
		}
	}
	if o.expectGPUs < 0 {
		return p, ref, usageErrorf("--expect-gpus %d: must not be negative", o.expectGPUs)
	}
	if o.expectGPUs > 0 {
		p.Expect.GPUs = o.expectGPUs
	}
	if o.expectModel != "" {
		p.Expect.Model = o.expectModel
	}
	if len(o.layers) > 0 {
		p.Layers = nil
		for _, s := range o.layers {
			l, err := accept.ParseLayer(strings.TrimSpace(s))
			if err != nil {
				return p, ref, usageErrorf("--layers: %w", err)
			}
			p.Layers = append(p.Layers, l)
		}
	}
	ref.SHA256 = nodepolicy.Hash(p)
	return p, ref, nil
}

func runAccept(ctx context.Context, o *acceptOptions, out, errOut io.Writer) error {
	switch o.format {
	case "table", "text", "json", "yaml", "markdown":
	default:
		return usageErrorf("-o/--format %q: want table, text, json, yaml or markdown", o.format)
	}
	pol, ref, err := o.policy(errOut)
	if err != nil {
		return err
	}
	src, err := o.layerOpts.baselines()
	if err != nil {
		return err
	}
	if o.layerOpts.frameworksTimeout <= 0 {
		return usageErrorf("--frameworks-timeout %s: must be positive", o.layerOpts.frameworksTimeout)
	}
	// The policy's cache folders are checked as well as those given with --cache-dir.
	o.facts.cacheDirs = append(o.facts.cacheDirs, pol.Host.CacheDirs...)
	prog := newProgress(errOut, o.quiet)
	g, err := gather(ctx, &o.facts, prog)
	if err != nil {
		return err
	}
	defer g.Close()
	gatherLayers(ctx, &o.layerOpts, g, pol.LayersOrDefault(), src, prog)
	facts := g.Facts
	rep, err := accept.Run(ctx, facts, &pol, time.Now, prog)
	if err != nil {
		return err
	}
	rep.StartedAt = prog.start // the record's time includes gathering the facts
	rec := record.Build(record.Input{Report: rep, Facts: facts, Policy: ref, Tool: buildinfo.Get()})

	var files record.Files
	if o.outputDir != "" {
		if files, err = record.Write(o.outputDir, rec); err != nil {
			return err
		}
	}
	if err := renderAccept(out, o.format, rec, files); err != nil {
		return err
	}
	if o.outputDir != "" {
		fmt.Fprintf(errOut, "record written: %s\n                %s\n", files.JSON, files.Markdown)
	}
	if !rep.Passed {
		return silentFailure
	}
	return nil
}

func renderAccept(out io.Writer, format string, rec *record.Record, files record.Files) error {
	switch format {
	case "json":
		b, err := record.JSON(rec)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	case "yaml":
		b, err := record.JSON(rec)
		if err != nil {
			return err
		}
		if b, err = yaml.JSONToYAML(b); err != nil {
			return fmt.Errorf("rendering the record as YAML: %w", err)
		}
		_, err = out.Write(b)
		return err
	case "markdown":
		return record.Markdown(out, rec, files.SHA256)
	}
	return acceptTable(out, rec)
}

func acceptTable(out io.Writer, rec *record.Record) error {
	w := &errWriter{w: out}
	w.printf("%-6s %-28s %s\n", "STATUS", "CHECK", "RESULT")
	for _, c := range rec.Checks {
		w.printf("%-6s %-28s %s\n", strings.ToUpper(string(c.Status)), c.ID, c.Message)
		if c.Status == accept.StatusFail || c.Status == accept.StatusWarn {
			for _, g := range badGPURows(c.GPUs) {
				w.printf("%-6s %-28s %s\n", "", "", g)
			}
			if c.Fix != "" {
				w.printf("%-6s %-28s fix: %s\n", "", "", c.Fix)
			}
		}
	}
	s := rec.Summary
	w.printf("\n%s: %s on %s (%d pass, %d warn, %d fail, %d skip) in %.2fs\n", strings.ToUpper(rec.Result),
		"node acceptance", rec.Node, s.Pass, s.Warn, s.Fail, s.Skip, rec.DurationSeconds)
	if rec.Backend == "sim" {
		w.printf("note: simulated GPUs (--sim): this proves the pipeline, not the hardware\n")
	}
	return w.err
}

// badGPURows is one row for every failing and warning GPU of a per-GPU check, under its own
// status, naming it the ways a person finds it: "GPU 3 FAIL: GPU-…, serial 1654…, 00000000:3B:00.0: gen4 x8, ...".
// With one such GPU the check's message already says why, and the row only names it.
func badGPURows(gpus []accept.GPUResult) []string {
	bad := 0
	for _, g := range gpus {
		if g.Status == accept.StatusFail || g.Status == accept.StatusWarn {
			bad++
		}
	}
	var rows []string
	for _, st := range []accept.Status{accept.StatusFail, accept.StatusWarn} {
		for _, g := range gpus {
			if g.Status != st {
				continue
			}
			ids := []string{g.UUID}
			if g.Serial != "" {
				ids = append(ids, "serial "+g.Serial)
			}
			if g.BusID != "" {
				ids = append(ids, g.BusID)
			}
			row := fmt.Sprintf("GPU %d %s: %s", g.Index, strings.ToUpper(string(g.Status)), strings.Join(ids, ", "))
			if bad > 1 {
				row += ": " + g.Message
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// errWriter keeps the first write error so a table can be printed without checking each line.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, args...)
}

var _ = errors.New
