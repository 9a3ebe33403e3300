package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/platform"
	"github.com/gpunode/gpunode/internal/stress"
)

type stressOptions struct {
	gpu          gpuOptions
	tests        string
	gpus         string
	duration     time.Duration
	timeout      time.Duration
	interval     time.Duration
	pcieMinRatio float64
	output       outputFlags
	quiet        bool
	inProcess    bool
	childGPUs    string // hidden: serve as the child process of these GPUs
	fault        string // hidden: KIND:TEST:GPU, a fault injected in a child
}

func newStressCommand() *cobra.Command {
	o := &stressOptions{}
	cmd := &cobra.Command{
		Use:   "stress",
		Short: "Run bandwidth, compute and memory stress tests on the GPUs",
		Long: `Run native stress tests on the GPUs through the CUDA driver (libcuda.so.1; no CUDA
toolkit needed). Kernels are embedded as PTX and compiled by the driver.

Tests (--tests, in this order):
  hbm     device-to-device copies (cuMemcpyDtoD and three copy kernels) of 4 GiB buffers.
          GB/s counts the bytes read plus the bytes written (2 x the buffer per copy).
  fp32    an FMA-bound kernel, TFLOP/s (10^12 FLOP/s, an FMA is 2 FLOPs); every thread's
  fp64    result is checked bit for bit against the answer the host computes: a difference
          is silent data corruption.
  memory  walking ones, walking zeros and a seeded random pattern written and verified by
          kernels over most of the free memory; wrong words are reported with their device
          addresses.
  pcie    pinned host<->device copies of 1 GiB, GB/s (bytes moved once) in each direction,
          against the link's theoretical rate (gen x width, 128b/130b from gen3); a
          direction under --pcie-min-ratio of it fails.
  p2p     every ordered GPU pair: cuMemcpyPeerAsync bandwidth (GB/s, bytes moved once) and
          the latency of a 4-byte copy (us). Pairs without peer access are reported as
          not applicable, not as failures.

hbm, fp32, fp64 and memory run on all selected GPUs at once, each keeping its GPU busy for
--duration; pcie runs one GPU at a time, p2p one pair at a time. While every test runs,
the SM clock and clock-event (throttle) reasons are sampled through NVML; a reason that is
not benign (hardware slowdown, thermal, power brake) fails the test.

Each GPU's tests run in a child process of its own (this binary, re-executed), p2p in one
holding both GPUs of the pair: a kernel fault, whose CUDA error (CUDA_ERROR_LAUNCH_FAILED,
...) poisons a whole process, fails that test alone, and a test past its timeout has its
child killed, which frees the GPU; the GPU's later tests run in a new child, and the other
GPUs carry on. A child that crashes fails its test with the signal or exit code and its
last stderr line. --in-process runs everything in one process instead: a kernel fault then
skips every later test, and a hung GPU's later tests are skipped.

Performance against per-model baselines is the acceptance 'performance' check's job; stress
passes on correct results, PCIe against the link and steady clocks.

With --sim no kernel runs: the results are generated from the model's rates and the
scenario's faults, not measured (the same figures the performance layer of accept --sim
gets).

GB = 10^9 bytes. Exit codes: 0 every test passed, 1 a test failed or could not run (no
libcuda.so.1: every test is skipped), 2 bad usage.`,
		Example: `  gpunode stress
  gpunode stress --tests hbm,fp32 --gpus 0,1 --duration 30s
  gpunode stress --json > stress.json
  gpunode stress --sim h200x8 --tests all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStress(cmd.Context(), o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.tests, "tests", "all", "comma-separated tests: hbm, fp32, fp64, memory, pcie, p2p, or all")
	fs.StringVar(&o.gpus, "gpus", "all", "comma-separated GPU indexes as nvidia-smi numbers them, or all")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long hbm, fp32, fp64 and memory keep each GPU busy")
	fs.DurationVar(&o.timeout, "timeout", 0, "timeout of one test on one GPU or pair (0: 3 x --duration + 2m)")
	fs.DurationVar(&o.interval, "sample-interval", 500*time.Millisecond, "how often clocks and clock-event reasons are sampled")
	fs.Float64Var(&o.pcieMinRatio, "pcie-min-ratio", 0.75, "fail a PCIe direction under this fraction of the link's theoretical GB/s")
	o.output.add(fs, "the report (schema gpunode.dev/stress/v1, docs/stress.md)")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	fs.BoolVar(&o.inProcess, "in-process", false, "run the tests in this process instead of one child process per GPU (a kernel fault or hang then affects every GPU)")
	fs.StringVar(&o.childGPUs, "child-gpus", "", "internal: serve as the child process of these GPUs (JSON lines on stdin and stdout)")
	fs.StringVar(&o.fault, "inject-fault", "", "internal: run a faulty kernel instead of a test, trap|spin:TEST:GPU, to test the fault handling")
	_ = fs.MarkHidden("child-gpus")
	_ = fs.MarkHidden("inject-fault")
	o.gpu.addFlags(fs)
	return cmd
}

// plan checks the flags and turns them into a plan without GPUs.
func (o *stressOptions) plan() (stress.Plan, error) {
	tests, err := stress.ParseTests(o.tests)
	if err != nil {
		return stress.Plan{}, usageErrorf("--tests %q: %w", o.tests, err)
	}
	switch {
	case o.duration <= 0:
		return stress.Plan{}, usageErrorf("--duration %s: must be positive", o.duration)
	case o.timeout < 0:
		return stress.Plan{}, usageErrorf("--timeout %s: must not be negative", o.timeout)
	case o.interval <= 0:
		return stress.Plan{}, usageErrorf("--sample-interval %s: must be positive", o.interval)
	case o.pcieMinRatio < 0 || o.pcieMinRatio > 1:
		return stress.Plan{}, usageErrorf("--pcie-min-ratio %g: must be between 0 and 1", o.pcieMinRatio)
	}
	timeout := o.timeout
	if timeout == 0 {
		timeout = 3*o.duration + 2*time.Minute
	}
	return stress.Plan{Tests: tests, Duration: o.duration, Timeout: timeout, SampleInterval: o.interval, PCIeMinRatio: o.pcieMinRatio}, nil
}

func runStress(ctx context.Context, o *stressOptions, in io.Reader, out, errOut io.Writer) error {
	if o.childGPUs != "" {
		return runStressChild(ctx, o, in, out)
	}
	format, err := o.output.format()
	if err != nil {
		return err
	}
	p, err := o.plan()
	if err != nil {
		return err
	}
	want, err := parseGPUList(o.gpus)
	if err != nil {
		return err
	}
	var exec stress.Executor
	var sampler stress.ClockSampler
	var gpus []stress.GPU
	if o.gpu.sim != "" {
		plat, err := o.gpu.openPlatform(platform.Options{})
		if err != nil {
			return err
		}
		defer func() { _ = plat.Close() }()
		b, sb := plat.Backend, plat.Sim()
		snap, err := b.Snapshot(ctx)
		if err != nil {
			return fmt.Errorf("simulated GPUs: %w", err)
		}
		gpus = portGPUs(snap)
		exec, sampler = newSimExecutor(sb, snap), stress.BackendSampler{Backend: b}
	} else {
		var b gpu.Backend
		gpus, b, p.GPUError = realGPUs(ctx)
		if b != nil {
			defer func() { _ = b.Close() }()
			sampler = stress.BackendSampler{Backend: b}
		}
		if exec, err = o.realExecutor(); err != nil {
			return err
		}
		if c, ok := exec.(*stress.Children); ok {
			defer c.Close()
		}
	}
	if p.GPUs, err = selectGPUs(gpus, want, o.gpus); err != nil {
		return err
	}
	prog := newStressProgress(errOut, o.quiet)
	r := stress.Run(ctx, p, exec, sampler, prog)
	r.Simulated = o.gpu.sim != ""
	if format != formatText {
		if err := writeDocument(out, format, r); err != nil {
			return err
		}
	} else if err := stressText(out, &r, o.gpu.sim); err != nil {
		return err
	}
	if !r.Passed {
		return silentFailure
	}
	return nil
}

// realGPUs lists the GPUs through NVML and CUDA and matches them by PCI bus id.
// With NVML but no CUDA the GPUs are listed and each test will skip; with
// neither, the returned error says why.
func realGPUs(ctx context.Context) ([]stress.GPU, gpu.Backend, error) {
	var snap *gpu.Snapshot
	var b gpu.Backend
	if p, err := platform.Open(platform.Options{}); err == nil {
		if s, err := p.Backend.Snapshot(ctx); err == nil {
			snap, b = s, p.Backend
		} else {
			_ = p.Close()
		}
	}
	devs, cerr := stress.Devices(ctx)
	switch {
	case cerr != nil && snap == nil:
		return nil, nil, cerr
	case cerr != nil:
		return portGPUs(snap), b, nil // each test reports the CUDA error
	case snap == nil:
		return cudaGPUs(devs), nil, nil
	}
	gs, err := matchGPUs(snap, devs)
	if err != nil {
		// Without a match the link speeds and clocks cannot be tied to a CUDA
		// device: test by CUDA ordinal, without the PCIe reference or sampler.
		_ = b.Close()
		return cudaGPUs(devs), nil, nil
	}
	return gs, b, nil
}
