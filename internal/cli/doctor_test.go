package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpunode/gpunode/internal/doctor"
)

func TestDoctorOnASimulatedNodeFindsEveryLayerWorking(t *testing.T) {
	r := execute(t, "doctor", "--sim", "h100x8")
	r.check(t, ExitOK, []string{"1 driver", "NVML answers, 8 GPUs", "nvidia-gpu.sock", "Every layer works"}, nil)
}

func TestDoctorJSONNamesTheBrokenLayer(t *testing.T) {
	root := t.TempDir()
	// A host with the driver's module and nodes missing: layer 1 is broken.
	for _, d := range []string{"proc", "dev", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, "proc"), "modules", "ext4 1 0 - Live\n")
	r := execute(t, "doctor", "--sim", "h100x8", "--host-root", root, "--kernel-log", "none", "--json")
	if r.code != ExitFail {
		t.Fatalf("exit %d, want %d; stderr %s", r.code, ExitFail, r.stderr)
	}
	var rep doctor.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
	if rep.BrokenLayer != 1 || rep.Fix == "" {
		t.Fatalf("report %+v", rep)
	}
}

func TestDoctorRejectsArguments(t *testing.T) {
	execute(t, "doctor", "extra").check(t, ExitUsage, nil, nil)
}
