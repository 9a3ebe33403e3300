package stress

import (
	"encoding/binary"
	"fmt"
)

// Copy methods measured by HBMBandwidth.
const (
	MethodMemcpyDtoD   = "cuMemcpyDtoD"
	MethodKernel       = "kernel " + kernelCopy
	MethodKernelX4     = "kernel " + kernelCopyX4
	MethodKernelX4Hint = "kernel " + kernelCopyX4CS
)

// srcPattern fills the copy source; the destination is zeroed before each method.
const srcPattern = 0xA5C3_5A3C

// Result is one device-to-device copy measurement. GBps counts the bytes read
// plus the bytes written (2 x Bytes per copy), in 10^9 bytes per second.
type Result struct {
	Device  string  // device name as the driver reports it
	Method  string  // one of the Method constants
	Bytes   uint64  // size of one buffer (bytes copied per iteration)
	Iters   int     // copies timed
	Seconds float64 // GPU time of the timed copies (CUDA events)
	GBps    float64 // (read + write) bytes / Seconds / 1e9
}

// validateCopy checks HBMBandwidth's arguments.
func validateCopy(bytes uint64, iters int) error {
	if bytes == 0 || bytes%16 != 0 {
		return fmt.Errorf("%w: bytes %d must be a positive multiple of 16", ErrBadInput, bytes)
	}
	if iters <= 0 {
		return fmt.Errorf("%w: iters %d must be positive", ErrBadInput, iters)
	}
	return nil
}

// copyGBps is the read+write bandwidth of iters copies of bytes taking secs.
func copyGBps(bytes uint64, iters int, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return 2 * float64(bytes) * float64(iters) / secs / 1e9
}

// sampleWindows returns the offsets of up to three windows of size win (start,
// middle, end of a buffer of n bytes) whose copies are checked; all 4-aligned.
func sampleWindows(n, win uint64) []uint64 {
	if n <= win {
		return []uint64{0}
	}
	mid := (n / 2) &^ 3
	if mid+win > n {
		mid = n - win
	}
	return []uint64{0, mid, n - win}
}

// checkPattern reports the first 32-bit word in buf (at device offset base)
// that is not want.
func checkPattern(buf []byte, base uint64, want uint32) error {
	for i := 0; i+4 <= len(buf); i += 4 {
		if got := binary.LittleEndian.Uint32(buf[i:]); got != want {
			return fmt.Errorf("%w: copy destination offset %#x holds %#08x, want %#08x",
				ErrSilentDataCorruption, base+uint64(i), got, want)
		}
	}
	return nil
}
