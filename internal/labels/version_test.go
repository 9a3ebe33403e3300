package labels

import (
	"strings"
	"testing"
)

func TestDriverVersionLabels(t *testing.T) {
	tests := []struct {
		name    string
		version string
		want    map[string]string // nil = no driver labels at all
	}{
		{"a data-centre driver splits into major, minor and revision", "535.104.12", map[string]string{
			KeyDriverVersionFull: "535.104.12", KeyDriverVersionMajor: "535", KeyDriverVersionMinor: "104",
			KeyDriverVersionRevision: "12", KeyDriverMajor: "535", KeyDriverMinor: "104", KeyDriverRev: "12",
		}},
		{"a revision with a leading zero keeps it, as GFD does", "580.95.05", map[string]string{
			KeyDriverVersionFull: "580.95.05", KeyDriverVersionMajor: "580", KeyDriverVersionMinor: "95",
			KeyDriverVersionRevision: "05", KeyDriverMajor: "580", KeyDriverMinor: "95", KeyDriverRev: "05",
		}},
		{"the 550 branch parses the same way", "550.54.15", map[string]string{
			KeyDriverVersionFull: "550.54.15", KeyDriverVersionMajor: "550", KeyDriverVersionMinor: "54",
			KeyDriverVersionRevision: "15", KeyDriverMajor: "550", KeyDriverMinor: "54", KeyDriverRev: "15",
		}},
		{"a two-part version has no revision labels", "550.54", map[string]string{
			KeyDriverVersionFull: "550.54", KeyDriverVersionMajor: "550", KeyDriverVersionMinor: "54",
			KeyDriverMajor: "550", KeyDriverMinor: "54",
		}},
		{"surrounding spaces are ignored", " 580.95.05\n", map[string]string{
			KeyDriverVersionFull: "580.95.05", KeyDriverVersionMajor: "580", KeyDriverVersionMinor: "95",
			KeyDriverVersionRevision: "05", KeyDriverMajor: "580", KeyDriverMinor: "95", KeyDriverRev: "05",
		}},
		{"an empty version gives no labels", "", nil},
		{"a single number gives no labels", "580", nil},
		{"four parts give no labels", "580.95.05.1", nil},
		{"letters give no labels", "580.95.05-beta", nil},
		{"an empty part gives no labels", "580..05", nil},
		{"a word gives no labels", "unknown", nil},
		{"a version longer than a label value gives no labels", "580.95." + strings.Repeat("0", 60), nil},
	}
	driverKeys := []string{KeyDriverVersionFull, KeyDriverVersionMajor, KeyDriverVersionMinor,
		KeyDriverVersionRevision, KeyDriverMajor, KeyDriverMinor, KeyDriverRev}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := oneH200()
			snap.Driver.Version = tt.version
			got := Discovery(snap, NodeInfo{}, Config{})
			for _, k := range driverKeys {
				g, ok := got[k]
				w, want := tt.want[k]
				if ok != want || g != w {
					t.Errorf("%s = %q (present %v), want %q (present %v)", k, g, ok, w, want)
				}
			}
			if got[KeyGPUProduct] != "NVIDIA-H200" {
				t.Errorf("a driver version problem cost the other labels: product %q", got[KeyGPUProduct])
			}
		})
	}
}

func TestCUDAVersionLabels(t *testing.T) {
	tests := []struct {
		name               string
		version            string
		full, major, minor string // "" = no labels
	}{
		{"CUDA 13.0 gives 13, 0 and 13.0", "13.0", "13.0", "13", "0"},
		{"CUDA 12.4 gives 12, 4 and 12.4", "12.4", "12.4", "12", "4"},
		{"a zero-padded minor is printed as a number, as GFD does", "12.04", "12.4", "12", "4"},
		{"an empty CUDA version gives no labels", "", "", "", ""},
		{"a bare major gives no labels", "13", "", "", ""},
		{"three parts give no labels", "13.0.1", "", "", ""},
		{"letters give no labels", "13.x", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := oneH200()
			snap.Driver.CUDAVersion = tt.version
			got := Discovery(snap, NodeInfo{}, Config{})
			want := map[string]string{
				KeyRuntimeVersionFull: tt.full, KeyRuntimeVersionMajor: tt.major, KeyRuntimeVersionMinor: tt.minor,
				KeyRuntimeMajor: tt.major, KeyRuntimeMinor: tt.minor,
			}
			for k, w := range want {
				g, ok := got[k]
				if w == "" && ok {
					t.Errorf("%s = %q, want no label", k, g)
				} else if w != "" && g != w {
					t.Errorf("%s = %q, want %q", k, g, w)
				}
			}
		})
	}
}
