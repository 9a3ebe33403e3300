package stress

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// The faults InjectFault can run.
const (
	FaultTrap = "trap" // a trapping kernel: CUDA_ERROR_LAUNCH_FAILED, sticky
	FaultSpin = "spin" // a kernel that never ends
)

// FaultExecutor runs Fault instead of Test on the GPU with index GPU and
// passes everything else to Executor: a test of the fault handling on real
// GPUs (`gpunode stress --inject-fault`, hidden).
type FaultExecutor struct {
	Executor
	Fault string
	Test  Test
	GPU   int
}

// ParseFault reads "KIND:TEST:GPU", e.g. "trap:fp32:0".
func ParseFault(s string) (fault string, t Test, gpu int, err error) {
	f := strings.Split(s, ":")
	if len(f) != 3 || (f[0] != FaultTrap && f[0] != FaultSpin) || !isTest(Test(f[1])) || Test(f[1]) == TestP2P {
		return "", "", 0, fmt.Errorf("%w: fault %q: want trap|spin:TEST:GPU, TEST a single-GPU test", ErrBadInput, s)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n < 0 {
		return "", "", 0, fmt.Errorf("%w: fault %q: %q is not a GPU index", ErrBadInput, s, f[2])
	}
	return f[0], Test(f[1]), n, nil
}

// Device implements Executor.
func (e FaultExecutor) Device(ctx context.Context, t Test, g GPU, p Plan) (Outcome, error) {
	if t == e.Test && g.Index == e.GPU {
		return Outcome{Device: g.Name}, InjectFault(ctx, g.Ordinal, e.Fault)
	}
	return e.Executor.Device(ctx, t, g, p)
}
