package stress

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"strings"
	"testing"
	"time"
)

func TestPatternWord(t *testing.T) {
	tests := []struct {
		name  string
		kind  PatternKind
		shift uint32
		seed  uint32
		i     uint64
		want  uint32
	}{
		{"walking ones sets bit 0 of word 0 in pass 0", PatternWalkingOnes, 0, 0, 0, 1},
		{"walking ones moves the bit with the word index and the shift", PatternWalkingOnes, 3, 0, 5, 1 << 8},
		{"walking ones wraps past bit 31", PatternWalkingOnes, 1, 0, 31, 1},
		{"walking zeros clears the bit walking ones sets", PatternWalkingZeros, 3, 0, 5, ^uint32(1 << 8)},
		// Values from an independent Python implementation of the murmur3 finaliser.
		{"random word 0 of the default seed", PatternRandom, 0, defaultSeed, 0, 0x815786a8},
		{"random word 1 of the default seed", PatternRandom, 0, defaultSeed, 1, 0xcfbcf72e},
		{"random words past 2^32 mix in the high index bits", PatternRandom, 5, defaultSeed, 1<<33 | 7, 0xa50bea1a},
		{"another seed gives another word", PatternRandom, 0, 1, 0, 0x514e28b7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := patternWord(tc.kind, tc.shift, tc.seed, tc.i); got != tc.want {
				t.Fatalf("patternWord = %#08x, want %#08x", got, tc.want)
			}
		})
	}
}

func TestWalkingPatternsCoverEveryBitOnceIn32Words(t *testing.T) {
	for _, k := range []PatternKind{PatternWalkingOnes, PatternWalkingZeros} {
		var or uint32
		for i := range uint64(32) {
			w := patternWord(k, 7, 0, 1000+i)
			if k == PatternWalkingZeros {
				w = ^w
			}
			if bits.OnesCount32(w) != 1 || or&w != 0 {
				t.Fatalf("%s word %d = %#08x: not exactly one new bit", k, 1000+i, w)
			}
			or |= w
		}
		if or != ^uint32(0) {
			t.Fatalf("%s: 32 words cover bits %#08x, want all", k, or)
		}
	}
}

func TestPassSchedule(t *testing.T) {
	tests := []struct {
		name string
		p    int
		want Pass
	}{
		{"the first pass is walking ones", 0, Pass{PatternWalkingOnes, 0}},
		{"the second pass is walking zeros", 1, Pass{PatternWalkingZeros, 0}},
		{"the third pass is random", 2, Pass{PatternRandom, 0}},
		{"the fourth pass walks ones shifted by one bit", 3, Pass{PatternWalkingOnes, 1}},
		{"pass 95 is the last random pass of the 32 shifts", 95, Pass{PatternRandom, 31}},
		{"pass 96 starts over", 96, Pass{PatternWalkingOnes, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := passAt(tc.p); got != tc.want {
				t.Fatalf("passAt(%d) = %+v, want %+v", tc.p, got, tc.want)
			}
		})
	}
}

func TestVerifyPatternFindsWrongWordsWithOffsets(t *testing.T) {
	ps := Pass{Kind: PatternRandom, Shift: 4}
	const base = 1 << 20 // word index of the buffer's first word
	buf := make([]byte, 4096)
	fillPattern(buf, base, ps, defaultSeed)
	if n, errs := verifyPattern(buf, base, ps, defaultSeed, 4); n != 0 || errs != nil {
		t.Fatalf("intact buffer: %d wrong words %v", n, errs)
	}
	if n, _ := verifyPattern(buf, base+1, ps, defaultSeed, 4); n == 0 {
		t.Fatal("the pattern checked one word off matched: it does not depend on the address")
	}
	buf[40] ^= 0x01
	buf[44] ^= 0x80
	buf[4000] ^= 0x10
	n, errs := verifyPattern(buf, base, ps, defaultSeed, 2)
	if n != 3 || len(errs) != 2 {
		t.Fatalf("three flipped bits: %d wrong words, %d recorded; want 3 and the first 2", n, len(errs))
	}
	e := errs[0]
	if e.Offset != 4*(base+10) || e.Actual^e.Expected != 1 || e.Pattern != "random" {
		t.Fatalf("first error %+v: want offset %#x with bit 0 flipped", e, 4*(base+10))
	}
}

// errBuffer encodes a pattern_check error buffer.
func errBuffer(count uint64, entries [][3]uint64) []byte {
	buf := make([]byte, 16+16*len(entries))
	binary.LittleEndian.PutUint64(buf, count)
	for k, e := range entries {
		binary.LittleEndian.PutUint64(buf[16+16*k:], e[0])
		binary.LittleEndian.PutUint64(buf[24+16*k:], e[1]<<32|e[2])
	}
	return buf
}

func TestDecodeErrors(t *testing.T) {
	ps := Pass{Kind: PatternWalkingOnes, Shift: 2}
	const base = 0x7f0000000000
	right := func(w uint64) uint64 { return uint64(patternWord(ps.Kind, ps.Shift, 0, w)) }
	tests := []struct {
		name    string
		buf     []byte
		count   uint64
		n       int
		wantErr string
	}{
		{"an empty buffer reports no errors", errBuffer(0, nil), 0, 0, ""},
		{"entries beyond the buffer are counted but not decoded", errBuffer(5, [][3]uint64{{10, right(10), 0}, {99, right(99), 7}}), 5, 2, ""},
		{"an entry whose expected word disagrees with the host is a kernel error", errBuffer(1, [][3]uint64{{10, 0x1234, 0}}), 1, 0, "host computes"},
		{"a buffer shorter than its header is refused", []byte{1, 2, 3}, 0, 0, "shorter than its header"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			count, errs, err := decodeErrors(tc.buf, ps, 0, base)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || count != tc.count || len(errs) != tc.n {
				t.Fatalf("count %d, %d errors, err %v; want %d, %d", count, len(errs), err, tc.count, tc.n)
			}
			if tc.n > 1 && (errs[1].Address != base+4*99 || errs[1].Offset != 4*99 || errs[1].Actual != 7) {
				t.Fatalf("second error %+v: want address %#x", errs[1], base+4*99)
			}
		})
	}
}

func TestMemoryTestBytes(t *testing.T) {
	const mib, gib = 1 << 20, 1 << 30
	tests := []struct {
		name        string
		free, total uint64
		want        uint64
	}{
		{"an H200 leaves 1/64 of its memory to the driver", 140 * gib, 141 * gib, (140*gib - 141*gib/64) &^ (2*mib - 1)},
		{"a small GPU leaves at least 256 MiB", 4 * gib, 4 * gib, 4*gib - 256*mib},
		{"free memory under the margin leaves nothing to test", 200 * mib, 16 * gib, 0},
		{"the size is rounded down to 2 MiB", 1*gib + 3*mib + 5, 2 * gib, (1*gib + 3*mib + 5 - 256*mib) &^ (2*mib - 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := memoryTestBytes(tc.free, tc.total); got != tc.want {
				t.Fatalf("memoryTestBytes(%d, %d) = %d, want %d", tc.free, tc.total, got, tc.want)
			}
		})
	}
}

func TestMemoryDone(t *testing.T) {
	tests := []struct {
		name    string
		o       MemoryOptions
		p       int
		elapsed time.Duration
		want    bool
	}{
		{"the first pass always runs", MemoryOptions{Duration: time.Second}, 0, time.Hour, false},
		{"neither duration nor passes runs one pass", MemoryOptions{}, 1, 0, true},
		{"passes alone run that many passes", MemoryOptions{MaxPasses: 6}, 5, time.Hour, false},
		{"passes alone stop after the last", MemoryOptions{MaxPasses: 6}, 6, 0, true},
		{"a duration keeps going while time is left", MemoryOptions{Duration: time.Second}, 40, 900 * time.Millisecond, false},
		{"a duration stops once it has passed", MemoryOptions{Duration: time.Second}, 40, time.Second, true},
		{"passes stop a duration early", MemoryOptions{Duration: time.Hour, MaxPasses: 3}, 3, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := memoryDone(tc.o, tc.p, tc.elapsed); got != tc.want {
				t.Fatalf("memoryDone(%+v, %d, %s) = %v, want %v", tc.o, tc.p, tc.elapsed, got, tc.want)
			}
		})
	}
}

func TestValidateMemory(t *testing.T) {
	tests := []struct {
		name string
		o    MemoryOptions
		ok   bool
	}{
		{"defaults are accepted", MemoryOptions{}, true},
		{"a size that is not a multiple of 16 is refused", MemoryOptions{Bytes: 20}, false},
		{"a negative duration is refused", MemoryOptions{Duration: -time.Second}, false},
		{"negative passes are refused", MemoryOptions{MaxPasses: -1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := validateMemory(tc.o); tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrBadInput)) {
				t.Fatalf("validateMemory(%+v) = %v", tc.o, err)
			}
		})
	}
}

func TestMemoryFindingsErrorNamesTheFirstAddress(t *testing.T) {
	r := MemoryResult{Bytes: 1 << 30, Passes: 3}
	if err := r.findingsError(); err != nil {
		t.Fatalf("no wrong words: %v", err)
	}
	r.ErrorCount = 2
	r.Errors = []MemoryError{{Address: 0x7f00000010a0, Offset: 0x10a0, Expected: 1, Actual: 3, Pattern: "walking-ones"}}
	err := r.findingsError()
	if !errors.Is(err, ErrMemoryError) || !strings.Contains(err.Error(), "address 0x7f00000010a0") {
		t.Fatalf("err = %v, want ErrMemoryError naming the address", err)
	}
}
