package stress

import _ "embed"

// kernelPTX holds the kernels of kernels/stress.cu as PTX (see the comment at
// the top of kernels/stress.ptx for how it was generated).
//
//go:embed kernels/stress.ptx
var kernelPTX string

// Kernel entry points in kernelPTX.
const (
	kernelCopy     = "copy_u4"
	kernelCopyX4   = "copy_u4_x4"
	kernelCopyX4CS = "copy_u4_x4cs"
	kernelFMA      = "fma_fp32"
	kernelFMA64    = "fma_fp64"
	kernelFill     = "pattern_fill"
	kernelCheck    = "pattern_check"
)

// Launch shape: 256 threads a block, 8 blocks per SM (2048 threads, the most an
// SM of sm_80/sm_90 keeps resident).
const (
	blockThreads = 256
	blocksPerSM  = 8
)
