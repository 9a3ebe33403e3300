package dra

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHolder(t *testing.T) {
	const gpu0, gpu1, mig0 = "GPU-0", "GPU-1", "MIG-0"
	cp := &Checkpoint{Version: checkpointVersion, Claims: map[string]PreparedClaim{
		"whole": {Namespace: "a", Name: "whole", Devices: []PreparedDevice{{Device: "gpu-1", UUID: gpu1}}},
		"mig":   {Namespace: "a", Name: "mig", Devices: []PreparedDevice{{Device: "gpu-0-mig-1-0", UUID: mig0, Parent: gpu0}}},
		"diag":  {Namespace: "d", Name: "diag", Devices: []PreparedDevice{{Device: "gpu-2", UUID: "GPU-2", AdminAccess: true}}},
	}}
	tests := []struct {
		name string
		uid  string
		dev  PreparedDevice
		want string
	}{
		{"a GPU another claim holds is held", "new", PreparedDevice{UUID: gpu1}, "a/whole (whole)"},
		{"a claim does not conflict with itself", "whole", PreparedDevice{UUID: gpu1}, ""},
		{"a whole GPU whose MIG device another claim holds is held", "new", PreparedDevice{UUID: gpu0}, "a/mig (mig)"},
		{"a MIG device of a GPU another claim holds whole is held", "new", PreparedDevice{UUID: "MIG-9", Parent: gpu1}, "a/whole (whole)"},
		{"another MIG device of the same GPU is free", "new", PreparedDevice{UUID: "MIG-1", Parent: gpu0}, ""},
		{"a GPU only an admin-access claim sees is free", "new", PreparedDevice{UUID: "GPU-2"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cp.holder(tt.uid, tt.dev); got != tt.want {
				t.Errorf("holder = %q, want %q", got, tt.want)
			}
		})
	}
}

// The checkpoint is a host file: whatever it holds, reading it gives a checkpoint or an
// error, never a panic, and a checkpoint read back writes back to the same.
func FuzzReadCheckpoint(f *testing.F) {
	f.Add([]byte(`{"version":1,"claims":{"u":{"namespace":"a","name":"b","devices":[{"requests":["gpu"],"pool":"n","device":"gpu-0","uuid":"GPU-0","cdiDevices":["gpu.gpunode.dev/claim=u-gpu-0"]}]}}}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"claims":null}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, CheckpointFile), data, 0o600); err != nil {
			t.Fatal(err)
		}
		cp, err := readCheckpoint(dir)
		if err != nil {
			return
		}
		if cp.Claims == nil || cp.Version != checkpointVersion {
			t.Fatalf("read %+v", cp)
		}
		if err := cp.write(dir); err != nil {
			t.Fatal(err)
		}
		again, err := readCheckpoint(dir)
		if err != nil || len(again.Claims) != len(cp.Claims) {
			t.Fatalf("written and read again: %v, %d claims, want %d", err, len(again.Claims), len(cp.Claims))
		}
	})
}
