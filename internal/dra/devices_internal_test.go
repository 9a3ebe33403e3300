package dra

import "testing"

func TestSemver(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"a driver version drops its leading zeros", "580.159.04", "580.159.4"},
		{"a CUDA version gets a patch of zero", "13.0", "13.0.0"},
		{"a compute capability gets a patch of zero", "9.0", "9.0.0"},
		{"a single number gets minor and patch", "550", "550.0.0"},
		{"an empty version is not published", "", ""},
		{"a version with letters is not published", "r580", ""},
		{"a version of four parts is not published", "1.2.3.4", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := semver(tt.in)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("semver(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
			}
		})
	}
}

func TestBusID(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"NVML's eight-digit domain becomes four digits, lower case", "00000000:1B:00.0", "0000:1b:00.0"},
		{"a four-digit domain is kept", "0000:18:00.0", "0000:18:00.0"},
		{"a domain beyond four digits is not published", "00010000:18:00.0", ""},
		{"an empty bus ID is not published", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := busID(tt.in)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("busID(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
			}
		})
	}
}
