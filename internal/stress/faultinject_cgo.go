//go:build cgo

package stress

// #include "cuda_shim.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
)

// Kernels that fail on purpose, for the tests that prove a GPU fault is a
// failed test and not a crash or a hang. They are not in kernels/stress.cu:
// no measurement uses them.
const (
	// trapPTX executes trap: the launch fails and the context is lost (a
	// sticky error), as after an XID 13 or a lost GPU.
	trapPTX = ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry trap_kernel()\n{\n\ttrap;\n}\n"
	// spinPTX never returns: the synchronize after it blocks until the process exits.
	spinPTX = ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry spin_forever()\n{\n$L_spin:\n\tbra.uni $L_spin;\n}\n"
)

// runPTX launches entry of ptx as one thread on device dev and waits for it.
func runPTX(ctx context.Context, dev int, ptx, entry string) error {
	return withDevice(ctx, dev, func(s *session) (err error) {
		fns, unload, err := s.moduleFrom(ptx, entry)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, unload()) }()
		if err := check("cuLaunchKernel "+entry, C.launch_none(fns[entry])); err != nil {
			return err
		}
		return s.sync()
	})
}

// InjectFault runs a kernel that fails on purpose on device dev: "trap"
// (CUDA_ERROR_LAUNCH_FAILED, sticky) or "spin" (never returns). It exists to
// prove on a real GPU that the child processes contain both (FaultExecutor).
func InjectFault(ctx context.Context, dev int, kind string) error {
	switch kind {
	case FaultTrap:
		return runPTX(ctx, dev, trapPTX, "trap_kernel")
	case FaultSpin:
		return runPTX(ctx, dev, spinPTX, "spin_forever")
	}
	return fmt.Errorf("%w: unknown fault %q (want %s or %s)", ErrBadInput, kind, FaultTrap, FaultSpin)
}
