package stress

import (
	"errors"
	"math"
	"testing"
)

func TestPCIeTheoreticalGBps(t *testing.T) {
	tests := []struct {
		name       string
		gen, width int
		want       float64
	}{
		{"gen1 x16 is 2.5 GT/s with 8b/10b", 1, 16, 4},
		{"gen2 x16 is 5 GT/s with 8b/10b", 2, 16, 8},
		{"gen3 x16 is 8 GT/s with 128b/130b", 3, 16, 8 * 128.0 / 130 * 2},
		{"gen4 x16 is 16 GT/s with 128b/130b", 4, 16, 31.50769230769231},
		{"gen5 x16 (the H200) is about 63 GB/s", 5, 16, 63.01538461538462},
		{"gen5 x8 is half of x16", 5, 8, 31.50769230769231},
		{"gen6 x16 uses FLIT mode's 242/256", 6, 16, 64 * 242.0 / 256 * 2},
		{"an unknown generation has no reference", 0, 16, 0},
		{"a future generation has no reference", 7, 16, 0},
		{"an unknown width has no reference", 5, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PCIeTheoreticalGBps(tc.gen, tc.width); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("PCIeTheoreticalGBps(%d, %d) = %v, want %v", tc.gen, tc.width, got, tc.want)
			}
		})
	}
}

func TestTransferGBpsCountsBytesOnce(t *testing.T) {
	if got := transferGBps(1<<30, 10, 0.2); math.Abs(got-53.687091) > 1e-6 {
		t.Fatalf("10 x 1 GiB in 0.2 s = %v GB/s, want 53.687091", got)
	}
	if got := transferGBps(1, 1, 0); got != 0 {
		t.Fatalf("zero seconds = %v, want 0", got)
	}
}

func TestOrderedPairs(t *testing.T) {
	tests := []struct {
		name string
		n    int
		want []Pair
	}{
		{"no GPUs have no pairs", 0, nil},
		{"one GPU has no pairs", 1, nil},
		{"two GPUs have both directions", 2, []Pair{{0, 1}, {1, 0}}},
		{"three GPUs have six pairs, source-major", 3, []Pair{{0, 1}, {0, 2}, {1, 0}, {1, 2}, {2, 0}, {2, 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := OrderedPairs(tc.n)
			if len(got) != len(tc.want) {
				t.Fatalf("OrderedPairs(%d) = %v, want %v", tc.n, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("OrderedPairs(%d) = %v, want %v", tc.n, got, tc.want)
				}
			}
		})
	}
	seen := map[Pair]bool{}
	for _, p := range OrderedPairs(8) {
		if p.Src == p.Dst || seen[p] {
			t.Fatalf("8 GPUs: pair %v repeats or is a self pair", p)
		}
		seen[p] = true
	}
	if len(seen) != 56 {
		t.Fatalf("8 GPUs: %d pairs, want 56", len(seen))
	}
}

func TestParseBusID(t *testing.T) {
	h200 := BusID{Domain: 0, Bus: 0x18, Dev: 0, Fn: 0}
	tests := []struct {
		name string
		in   string
		want BusID
		ok   bool
	}{
		{"NVML's eight-digit domain", "00000000:18:00.0", h200, true},
		{"CUDA's four-digit domain", "0000:18:00.0", h200, true},
		{"lower-case hex", "0001:af:1f.7", BusID{Domain: 1, Bus: 0xAF, Dev: 0x1F, Fn: 7}, true},
		{"a missing function is refused", "0000:18:00", BusID{}, false},
		{"a device number over 31 is refused", "0000:18:20.0", BusID{}, false},
		{"a function over 7 is refused", "0000:18:00.8", BusID{}, false},
		{"text is refused", "GPU-1234", BusID{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseBusID(tc.in)
			if tc.ok != (err == nil) || got != tc.want {
				t.Fatalf("ParseBusID(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if err != nil && !errors.Is(err, ErrBadInput) {
				t.Fatalf("err = %v, want ErrBadInput", err)
			}
		})
	}
}
