package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/doctor"
)

const xid79Scenario = "../../examples/scenarios/h100x8-xid79.yaml"

// The scenario's GPU 2: index, UUID and bus ID as the simulated h100x8 has them.
var lostGPU = doctor.GPURef{Index: 2, UUID: "GPU-e032d848-0031-eaba-b3d8-66ff3a169728", BusID: "00000000:3A:00.0"}

func TestDoctorNamesAGPUThatFellOffTheBus(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		code    int
		present []string
		absent  []string
	}{
		{"before the fault's time every layer works",
			[]string{"--sim", xid79Scenario}, ExitOK,
			[]string{"GPU health", "8 GPUs answer", "Every layer works"}, []string{"BROKEN"}},
		{"past the fault's time the lost GPU breaks layer 1 by index, UUID and bus ID",
			[]string{"--sim", xid79Scenario, "--sim-elapsed", "1m"}, ExitFail,
			[]string{"GPU 2", lostGPU.UUID, lostGPU.BusID, "gpu-lost", "xid-79", "BROKEN",
				"Layer 1 (driver and GPUs) is broken: 1 GPU is broken", "Fix: capture `dmesg`, drain the node and reboot it"},
			[]string{"Every layer works"}},
		{"the layers above a lost GPU are still checked",
			[]string{"--sim", xid79Scenario, "--sim-elapsed", "1m"}, ExitFail,
			[]string{"2 container toolkit and CDI", "CDI specs", "3 device plugin", "nvidia-gpu.sock"},
			[]string{"not checked"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := execute(t, append([]string{"doctor"}, tc.args...)...)
			r.check(t, tc.code, tc.present, nil)
			for _, s := range tc.absent {
				if strings.Contains(r.stdout, s) {
					t.Errorf("stdout has %q:\n%s", s, r.stdout)
				}
			}
		})
	}
}

func TestDoctorReportsTheLostGPUInJSONAndYAML(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			r := execute(t, "doctor", "--sim", xid79Scenario, "--sim-elapsed", "1m", "-o", format)
			if r.code != ExitFail {
				t.Fatalf("exit %d, want %d; stderr %s", r.code, ExitFail, r.stderr)
			}
			var rep doctor.Report
			var err error
			if format == "json" {
				err = json.Unmarshal([]byte(r.stdout), &rep)
			} else {
				err = yaml.UnmarshalStrict([]byte(r.stdout), &rep)
			}
			if err != nil {
				t.Fatalf("doctor -o %s: %v\n%s", format, err, r.stdout)
			}
			if rep.Schema != doctor.Schema || rep.BrokenLayer != 1 || rep.Fix == "" {
				t.Fatalf("report: schema %q, broken layer %d, fix %q", rep.Schema, rep.BrokenLayer, rep.Fix)
			}
			var broken []doctor.Probe
			for _, p := range rep.Probes {
				if p.Status == doctor.Broken {
					broken = append(broken, p)
				}
			}
			if len(broken) != 1 || broken[0].GPU == nil || *broken[0].GPU != lostGPU {
				t.Fatalf("want exactly GPU 2 broken, got %+v", broken)
			}
			causes := map[string]bool{}
			for _, f := range broken[0].Findings {
				causes[f.Cause] = true
			}
			if !causes["gpu-lost"] || !causes["xid-79"] {
				t.Errorf("GPU 2's findings %+v lack gpu-lost and xid-79", broken[0].Findings)
			}
		})
	}
}

func TestDoctorRejectsAnUnknownOutputFormat(t *testing.T) {
	execute(t, "doctor", "--sim", "h100x8", "-o", "xml").check(t, ExitUsage, nil, []string{"-o/--output", "xml"})
}
