package podresources

import (
	"testing"
	"time"
)

func TestDeviceIDStripsOnlyANumericReplicaSuffix(t *testing.T) {
	tests := []struct{ name, raw, want string }{
		{"a plain GPU UUID is kept", "GPU-a", "GPU-a"},
		{"a time-slicing replica suffix is stripped", "GPU-a::12", "GPU-a"},
		{"a MIG UUID's replica suffix is stripped", "MIG-b::0", "MIG-b"},
		{"a non-numeric suffix is not a replica and is kept", "GPU-a::x", "GPU-a::x"},
		{"an empty suffix is kept", "GPU-a::", "GPU-a::"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := deviceID(tt.raw); got != tt.want {
				t.Errorf("deviceID(%q) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

func TestResourceNamesMatchExactlyOrByStarPrefix(t *testing.T) {
	m := newMatcher(DefaultResourceNames())
	tests := []struct {
		name, resource string
		want           bool
	}{
		{"whole GPUs match", "nvidia.com/gpu", true},
		{"renamed shared GPUs match", "nvidia.com/gpu.shared", true},
		{"every MIG profile matches by prefix", "nvidia.com/mig-1g.18gb", true},
		{"a shared MIG profile matches by prefix", "nvidia.com/mig-2g.35gb.shared", true},
		{"a name that only starts like a GPU does not match", "nvidia.com/gpu-x", false},
		{"another vendor does not match", "amd.com/gpu", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.match(tt.resource); got != tt.want {
				t.Errorf("match(%q) = %v, want %v", tt.resource, got, tt.want)
			}
		})
	}
}

func TestBackoffDoublesFromItsBaseUpToTheLimit(t *testing.T) {
	tests := []struct {
		name     string
		failures int
		want     time.Duration
	}{
		{"the first failure waits the base", 1, time.Second},
		{"the second waits twice the base", 2, 2 * time.Second},
		{"the fourth waits eight times the base", 4, 8 * time.Second},
		{"the fifth is capped at the limit", 5, 10 * time.Second},
		{"a thousand failures stay at the limit without overflow", 1000, 10 * time.Second},
		{"no failure waits the full interval", 0, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := backoff(tt.failures, time.Second, 10*time.Second); got != tt.want {
				t.Errorf("backoff(%d, 1s, 10s) = %v, want %v", tt.failures, got, tt.want)
			}
		})
	}
}

func TestNewAppliesDefaults(t *testing.T) {
	c := New(Options{})
	o := c.opt
	if o.Socket != DefaultSocket || o.Refresh != DefaultRefresh || o.Timeout != DefaultTimeout || o.KeepStale != 3*DefaultRefresh || o.Log == nil || o.Clock == nil {
		t.Errorf("defaults = %+v", o)
	}
	if c.PodsFor("GPU-a") != nil || !c.Stats().LastAttempt.IsZero() {
		t.Error("a new Cache attributes something before its first refresh")
	}
}
