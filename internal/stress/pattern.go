package stress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// PatternKind is a memory test pattern, numbered as in kernels/stress.cu.
type PatternKind int

// Memory test patterns.
const (
	// PatternWalkingOnes sets bit (word index + pass) mod 32 of every 32-bit word.
	PatternWalkingOnes PatternKind = 0
	// PatternWalkingZeros clears that bit and sets all others.
	PatternWalkingZeros PatternKind = 1
	// PatternRandom is a seeded hash of the word index and the pass.
	PatternRandom PatternKind = 2
)

// String names the pattern as reports do.
func (k PatternKind) String() string {
	switch k {
	case PatternWalkingOnes:
		return "walking-ones"
	case PatternWalkingZeros:
		return "walking-zeros"
	case PatternRandom:
		return "random"
	}
	return fmt.Sprintf("pattern(%d)", int(k))
}

// Pass is one write-and-verify sweep of the memory test.
type Pass struct {
	Kind  PatternKind
	Shift uint32 // walking bit offset, or the random pattern's pass number
}

// passAt is pass number p of the schedule: the three kinds interleave (ones,
// zeros, random, ones shifted by one bit, ...) so a short run covers each kind,
// and 96 passes walk every bit position through every word in both polarities.
func passAt(p int) Pass {
	return Pass{Kind: PatternKind(p % 3), Shift: uint32(p/3) % 32}
}

// patternWord is the 32-bit word at word index i: the host twin of the
// kernel's pattern_word.
func patternWord(k PatternKind, shift, seed uint32, i uint64) uint32 {
	switch k {
	case PatternWalkingOnes:
		return 1 << ((uint32(i) + shift) & 31)
	case PatternWalkingZeros:
		return ^(uint32(1) << ((uint32(i) + shift) & 31))
	}
	h := uint32(i)*0x9E3779B1 + uint32(i>>32)*0x85EBCA77 + seed + shift*0x27D4EB2F
	h ^= h >> 16
	h *= 0x85EBCA6B
	h ^= h >> 13
	h *= 0xC2B2AE35
	h ^= h >> 16
	return h
}

// MemoryError is one word the memory test read back wrong.
type MemoryError struct {
	Address  uint64 `json:"address"` // device virtual address of the word
	Offset   uint64 `json:"offset"`  // byte offset in the tested buffer
	Expected uint32 `json:"expected"`
	Actual   uint32 `json:"actual"`
	Pattern  string `json:"pattern"`
	Pass     int    `json:"pass"`
}

// String formats the error as a report line.
func (e MemoryError) String() string {
	return fmt.Sprintf("address %#x (offset %#x): read %#08x, wrote %#08x (%s, pass %d; bits %#08x differ)",
		e.Address, e.Offset, e.Actual, e.Expected, e.Pattern, e.Pass, e.Actual^e.Expected)
}

// fillPattern writes pass's pattern into buf, whose first word has index base.
func fillPattern(buf []byte, base uint64, ps Pass, seed uint32) {
	for i := 0; i+4 <= len(buf); i += 4 {
		binary.LittleEndian.PutUint32(buf[i:], patternWord(ps.Kind, ps.Shift, seed, base+uint64(i/4)))
	}
}

// verifyPattern is the host twin of pattern_check: it counts the words of buf
// (first word index base) that differ from the pattern and returns the first
// max of them with offsets relative to the tested buffer.
func verifyPattern(buf []byte, base uint64, ps Pass, seed uint32, max int) (count uint64, errs []MemoryError) {
	for i := 0; i+4 <= len(buf); i += 4 {
		w := base + uint64(i/4)
		want := patternWord(ps.Kind, ps.Shift, seed, w)
		if got := binary.LittleEndian.Uint32(buf[i:]); got != want {
			count++
			if len(errs) < max {
				errs = append(errs, MemoryError{Offset: 4 * w, Expected: want, Actual: got, Pattern: ps.Kind.String()})
			}
		}
	}
	return count, errs
}

// errBufBytes is the size of the device error buffer for max entries: a
// 16-byte header (the count) and 16 bytes an entry.
func errBufBytes(max int) uint64 { return 16 + 16*uint64(max) }

// decodeErrors reads the device error buffer written by pattern_check. It
// checks each entry's expected word against the host's pattern, so a kernel
// that disagrees with the host is an error, not a memory finding.
func decodeErrors(buf []byte, ps Pass, seed uint32, base uint64) (count uint64, errs []MemoryError, err error) {
	if len(buf) < 16 {
		return 0, nil, fmt.Errorf("%w: error buffer of %d bytes is shorter than its header", ErrBadInput, len(buf))
	}
	count = binary.LittleEndian.Uint64(buf)
	n := min(count, uint64(len(buf)-16)/16)
	for k := range n {
		e := buf[16+16*k:]
		w := binary.LittleEndian.Uint64(e)
		v := binary.LittleEndian.Uint64(e[8:])
		me := MemoryError{Address: base + 4*w, Offset: 4 * w, Expected: uint32(v >> 32), Actual: uint32(v), Pattern: ps.Kind.String()}
		if want := patternWord(ps.Kind, ps.Shift, seed, w); me.Expected != want {
			return count, errs, fmt.Errorf("memory test kernel expected %#08x at word %d but the host computes %#08x (%s shift %d)",
				me.Expected, w, want, ps.Kind, ps.Shift)
		}
		errs = append(errs, me)
	}
	return count, errs, nil
}

// memoryTestBytes is how much of free bytes the memory test takes: all but a
// margin of 1/64 of the device (at least 256 MiB) for the driver and other
// users, rounded down to 2 MiB; 0 when nothing is left.
func memoryTestBytes(free, total uint64) uint64 {
	margin := max(total/64, 256<<20)
	if free <= margin {
		return 0
	}
	return (free - margin) &^ (2<<20 - 1)
}

// MemoryOptions bound the memory test on one GPU.
type MemoryOptions struct {
	// Bytes to test; 0 takes most of the free memory (memoryTestBytes).
	Bytes uint64
	// Duration: passes repeat until this much time has passed since the first
	// began (at least one pass; see memoryDone).
	Duration time.Duration
	// MaxPasses stops after this many passes (0: no limit); with Duration 0 it
	// is the number of passes.
	MaxPasses int
	// Seed of the random pattern (0: a fixed default).
	Seed uint32
	// MaxErrors is how many wrong words a pass records with addresses (0: 16).
	MaxErrors int

	// inject, in tests, corrupts word w to v after pass p's fill (n words).
	inject func(p int, n uint64) (w uint64, v uint32, ok bool)
}

// MemoryResult is what the memory test found on one GPU.
type MemoryResult struct {
	Device      string
	Bytes       uint64        // bytes tested
	FreeBytes   uint64        // free memory before the test (cuMemGetInfo)
	TotalBytes  uint64        // device memory
	Passes      int           // write-and-verify sweeps completed
	Seconds     float64       // GPU time of all passes
	GBps        float64       // bytes written plus read back per second, 10^9
	Patterns    []string      // kinds covered
	ErrorCount  uint64        // wrong words over all passes
	Errors      []MemoryError // the first wrong words, with addresses
	Elapsed     time.Duration // wall time
	MaxErrors   int
	Seed        uint32
	BaseAddress uint64 // device address of the tested buffer
}

// defaultSeed seeds the random pattern when MemoryOptions.Seed is 0.
const defaultSeed = 0x6770_756E // "gpun"

// ErrMemoryError means the memory test read back a word other than the one it
// wrote: a memory fault the GPU did not report.
var ErrMemoryError = errors.New("memory test found wrong words")

// validateMemory checks MemoryOptions.
func validateMemory(o MemoryOptions) error {
	switch {
	case o.Bytes%16 != 0:
		return fmt.Errorf("%w: memory test bytes %d must be a multiple of 16", ErrBadInput, o.Bytes)
	case o.Duration < 0:
		return fmt.Errorf("%w: memory test duration %s must not be negative", ErrBadInput, o.Duration)
	case o.MaxPasses < 0 || o.MaxErrors < 0:
		return fmt.Errorf("%w: memory test passes %d and errors %d must not be negative", ErrBadInput, o.MaxPasses, o.MaxErrors)
	}
	return nil
}

// memoryDone reports whether the memory test stops before pass p, elapsed
// after its first pass began: after MaxPasses, once Duration has passed, and
// after one pass when neither is set. The first pass always runs.
func memoryDone(o MemoryOptions, p int, elapsed time.Duration) bool {
	switch {
	case p == 0:
		return false
	case o.MaxPasses > 0 && p >= o.MaxPasses:
		return true
	case o.Duration > 0:
		return elapsed >= o.Duration
	}
	return o.MaxPasses == 0
}

// findingsError is nil when the test read back every word as written.
func (r *MemoryResult) findingsError() error {
	if r.ErrorCount == 0 {
		return nil
	}
	first := ""
	if len(r.Errors) > 0 {
		first = "; first at " + r.Errors[0].String()
	}
	return fmt.Errorf("%w: %d wrong words in %d passes over %d bytes%s", ErrMemoryError, r.ErrorCount, r.Passes, r.Bytes, first)
}
