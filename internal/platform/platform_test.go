package platform

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/kmsg"
	"github.com/gpunode/gpunode/internal/recovery"
)

func TestBadOptionsAreInvalidAndAMissingDriverIsNot(t *testing.T) {
	cases := []struct {
		name    string
		o       Options
		invalid bool
	}{
		{"an elapsed time without simulated GPUs is bad input", Options{SimElapsed: 1}, true},
		{"a negative elapsed time is bad input", Options{Sim: "h100x8", SimElapsed: -1}, true},
		{"a preset the simulator does not have is bad input", Options{Sim: "h900x8"}, true},
		{"a scenario file that is not there is bad input", Options{Sim: filepath.Join(t.TempDir(), "none.yaml")}, true},
		{"no NVIDIA driver on the host is a plain failure", Options{}, false},
		{"a driver version file without simulated GPUs is bad input", Options{SimDriverFile: "/run/nvidia/driver-version"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Open(tc.o)
			if err == nil {
				_ = p.Close()
				if !tc.invalid {
					t.Skip("this host has an NVIDIA driver")
				}
				t.Fatal("opened")
			}
			var inv *InvalidError
			if errors.As(err, &inv) != tc.invalid {
				t.Fatalf("%v: invalid %v, want %v", err, !tc.invalid, tc.invalid)
			}
		})
	}
}

func TestSimulatedGPUsBringTheirOwnKernelLogStepsAndEvidence(t *testing.T) {
	p, err := Open(Options{Sim: "h100x8", KernelLog: DefaultKernelLog})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	if !p.Simulated() || p.Sim() == nil || p.BootID() == nil {
		t.Fatalf("simulated %v, sim %v, boot ID reader %v", p.Simulated(), p.Sim() != nil, p.BootID() != nil)
	}
	if _, ok := p.Steps(Commands{Reset: []string{"false"}}).(recovery.Sim); !ok {
		t.Errorf("steps %T, want the simulated node's own", p.Steps(Commands{}))
	}
	if _, onHost := p.EvidenceKernel(); onHost {
		t.Error("a simulated node's evidence reads the host root")
	}
	if err := p.Sim().Inject(sim.Fault{Type: sim.FaultXID, GPU: 1, XID: 48}); err != nil {
		t.Fatal(err)
	}
	lines, err := p.KernelMessages(context.Background())
	if err != nil || len(lines) == 0 {
		t.Fatalf("kernel messages %v, %v: want the simulated node's XID lines", lines, err)
	}
	if p.KernelFollower(&kmsg.Follower{}) == nil {
		t.Error("no kernel follower for simulated GPUs with the default kernel log")
	}
	if _, _, err := p.Telemetry(); err != nil {
		t.Errorf("telemetry: %v", err)
	}
}

func TestTheKernelLogOption(t *testing.T) {
	saved := filepath.Join(t.TempDir(), "dmesg.txt")
	if err := os.WriteFile(saved, []byte("[ 1.0] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\nsecond\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		log      string
		lines    int
		invalid  bool
		follower bool
	}{
		{"none reads and follows nothing", NoKernelLog, 0, false, false},
		{"a saved log is read line by line", saved, 2, false, true},
		{"a named log that is not there is bad input", filepath.Join(t.TempDir(), "gone"), 0, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &Platform{o: Options{KernelLog: tc.log}}
			lines, err := ReadKernelLog(context.Background(), p.o)
			var inv *InvalidError
			if errors.As(err, &inv) != tc.invalid || len(lines) != tc.lines {
				t.Errorf("lines %d, err %v; want %d lines, invalid %v", len(lines), err, tc.lines, tc.invalid)
			}
			if got := p.KernelFollower(&kmsg.Follower{}) != nil; got != tc.follower {
				t.Errorf("follower %v, want %v", got, tc.follower)
			}
		})
	}
}
