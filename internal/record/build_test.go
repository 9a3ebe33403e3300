package record

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/gpu/sim"
)

func TestEveryTemplateFieldHasAValueOrAReason(t *testing.T) {
	cases := []struct {
		name  string
		input func(t *testing.T) Input
	}{
		{"a healthy simulated H100 node", func(t *testing.T) Input { return simulatedInput(t, "h100x8") }},
		{"a node with a pending row remap on one GPU", func(t *testing.T) Input {
			return simulatedInput(t, "h200x8", sim.Fault{GPU: 2, Type: sim.FaultRowRemapPending})
		}},
		{"a node whose GPUs could not be read", func(t *testing.T) Input {
			in := simulatedInput(t, "h100x8")
			f := *in.Facts
			f.GPU, f.GPUErr = nil, errors.New("NVML not found")
			return runInput(t, &f)
		}},
		{"a node whose host facts could not be read", func(t *testing.T) Input {
			in := simulatedInput(t, "h100x8")
			f := *in.Facts
			f.Host, f.HostErr = nil, errors.New("host root not mounted")
			return runInput(t, &f)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Build(tc.input(t))
			labels := r.Template.Labels()
			if len(labels) != 15 {
				t.Fatalf("template has %d fields, the record template has 15", len(labels))
			}
			for _, l := range labels {
				hasValue, hasReason := l.Field.Value != "", l.Field.NotApplicable != ""
				if hasValue == hasReason {
					t.Errorf("%s: value %q, not-applicable %q: want exactly one", l.Label, l.Field.Value, l.Field.NotApplicable)
				}
			}
		})
	}
}

func TestMissingFactsAreNamedInTheTemplate(t *testing.T) {
	in := simulatedInput(t, "h100x8")
	f := *in.Facts
	f.GPU, f.GPUErr = nil, errors.New("NVML not found")
	f.Host, f.HostErr = nil, errors.New("host root not mounted")
	r := Build(runInput(t, &f))
	for _, fld := range []Field{r.Template.DriverCUDA, r.Template.GPUCountHealth, r.Template.PCIeNVLinkNVSwitch} {
		if !strings.Contains(fld.NotApplicable, "NVML not found") {
			t.Errorf("GPU field %+v does not name the GPU error", fld)
		}
	}
	if !strings.Contains(r.Template.OSKernel.NotApplicable, "host root not mounted") {
		t.Errorf("OS / kernel %+v does not name the host error", r.Template.OSKernel)
	}
	if r.Backend != "" || len(r.GPUs) != 0 {
		t.Errorf("backend %q, %d GPUs: want none without GPU facts", r.Backend, len(r.GPUs))
	}
}

func TestTheResultFollowsTheReport(t *testing.T) {
	cases := []struct {
		name   string
		faults []sim.Fault
		want   string
	}{
		{"a healthy node passes", nil, ResultPassed},
		{"a GPU that fell off the bus fails the node", []sim.Fault{{GPU: 2, Type: sim.FaultXID, XID: 79}}, ResultFailed},
		{"a pending row remap fails the node", []sim.Fault{{GPU: 5, Type: sim.FaultRowRemapPending}}, ResultFailed},
		{"an application XID only warns, and the node passes", []sim.Fault{{GPU: 0, Type: sim.FaultXID, XID: 13}}, ResultPassed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := simulatedInput(t, "h100x8", tc.faults...)
			r := Build(in)
			if r.Result != tc.want {
				t.Errorf("result %q, want %q (summary %+v)", r.Result, tc.want, r.Summary)
			}
			if r.Summary != in.Report.Summary || len(r.Checks) != len(in.Report.Results) {
				t.Errorf("summary %+v with %d checks, report has %+v with %d", r.Summary, len(r.Checks), in.Report.Summary, len(in.Report.Results))
			}
			if r.APIVersion != APIVersion || r.Kind != Kind || r.Backend != "sim" || r.Node != "gpu-node-07" {
				t.Errorf("identity %s/%s backend %q node %q", r.APIVersion, r.Kind, r.Backend, r.Node)
			}
			wantURI := fmt.Sprintf("%s: %d pass, %d warn, %d fail, %d skip", tc.want, r.Summary.Pass, r.Summary.Warn, r.Summary.Fail, r.Summary.Skip)
			if r.Template.ResultEvidenceURI.Value != wantURI {
				t.Errorf("result field %q, want %q", r.Template.ResultEvidenceURI.Value, wantURI)
			}
		})
	}
}

func TestGPUStatusesMarkOnlyTheGPUsAtFault(t *testing.T) {
	cases := []struct {
		name   string
		faults []sim.Fault
		want   map[int]accept.Status // GPUs not named pass
		health string
	}{
		{"a healthy node marks every GPU pass", nil, nil, "8 of 8 without warnings or failures"},
		{"a pending row remap on GPU 2 marks only GPU 2 failed",
			[]sim.Fault{{GPU: 2, Type: sim.FaultRowRemapPending}},
			map[int]accept.Status{2: accept.StatusFail}, "7 of 8 without warnings or failures"},
		{"GPU 4 falling off the bus marks only GPU 4 failed",
			[]sim.Fault{{GPU: 4, Type: sim.FaultXID, XID: 79}},
			map[int]accept.Status{4: accept.StatusFail}, "7 of 8 without warnings or failures"},
		{"two GPUs with the same pending row remap are both marked, though the message names one",
			[]sim.Fault{{GPU: 2, Type: sim.FaultRowRemapPending}, {GPU: 5, Type: sim.FaultRowRemapPending}},
			map[int]accept.Status{2: accept.StatusFail, 5: accept.StatusFail}, "6 of 8 without warnings or failures"},
		{"a hot GPU 6 marks only GPU 6 with a warning",
			[]sim.Fault{{GPU: 6, Type: sim.FaultThermalThrottle}},
			map[int]accept.Status{6: accept.StatusWarn}, "7 of 8 without warnings or failures"},
		{"an application XID 13 on GPU 0, whose text holds \"): \", marks GPU 0 with a warning",
			[]sim.Fault{{GPU: 0, Type: sim.FaultXID, XID: 13}},
			map[int]accept.Status{0: accept.StatusWarn}, "7 of 8 without warnings or failures"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Build(simulatedInput(t, "h100x8", tc.faults...))
			if len(r.GPUs) != 8 {
				t.Fatalf("%d GPUs in the record, want 8", len(r.GPUs))
			}
			for i, g := range r.GPUs {
				want, ok := tc.want[i]
				if !ok {
					want = accept.StatusPass
				}
				if g.Index != i || g.Status != want {
					t.Errorf("GPU %d (index %d): status %s, want %s", i, g.Index, g.Status, want)
				}
				if g.UUID == "" || g.PCIBusID == "" || g.Model != "NVIDIA H100 80GB HBM3" {
					t.Errorf("GPU %d identity incomplete: %+v", i, g)
				}
			}
			if want := "8 × NVIDIA H100 80GB HBM3; " + tc.health; r.Template.GPUCountHealth.Value != want {
				t.Errorf("GPU count and health %q, want %q", r.Template.GPUCountHealth.Value, want)
			}
		})
	}
}

func TestAWrongGPUCountMarksNoGPU(t *testing.T) {
	in := simulatedInput(t, "h100x8")
	r := Build(runInput(t, in.Facts, func(p *accept.Policy) { p.Expect.GPUs = 4 }))
	if r.Result != ResultFailed {
		t.Fatalf("result %q with 8 GPUs where 4 are expected, want failed", r.Result)
	}
	for _, g := range r.GPUs {
		if g.Status != accept.StatusPass {
			t.Errorf("GPU %d: status %s; the count is the node's fault, not the GPU's", g.Index, g.Status)
		}
	}
}

func TestTheIDIsNodeStartTimeAndAContentHash(t *testing.T) {
	healthy := Build(simulatedInput(t, "h100x8"))
	if !regexp.MustCompile(`^gpu-node-07-20250314T092653Z-[0-9a-f]{8}$`).MatchString(healthy.ID) {
		t.Errorf("ID %q is not node-time-hash", healthy.ID)
	}
	if again := Build(simulatedInput(t, "h100x8")); again.ID != healthy.ID {
		t.Errorf("the same run gave IDs %q and %q", healthy.ID, again.ID)
	}
	faulty := Build(simulatedInput(t, "h100x8", sim.Fault{GPU: 1, Type: sim.FaultRowRemapFailure}))
	if faulty.ID == healthy.ID {
		t.Errorf("a different outcome kept the ID %q", healthy.ID)
	}
	if !strings.HasPrefix(faulty.ID, "gpu-node-07-20250314T092653Z-") {
		t.Errorf("ID %q: node and time differ from the healthy run's", faulty.ID)
	}
}

func TestNodeNamesAreSanitizedForFileNames(t *testing.T) {
	cases := []struct{ name, node, want string }{
		{"a plain name is kept", "gpu-node-07", "gpu-node-07"},
		{"capitals are lowered and other characters become dashes", "GPU_Node 07/a", "gpu-node-07-a"},
		{"dots are kept inside but trimmed at the ends", ".node.example.com.", "node.example.com"},
		{"a name of nothing usable becomes node", "__", "node"},
		{"an empty name becomes node", "", "node"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := sanitizeName(tc.node); got != tc.want {
				t.Errorf("sanitizeName(%q) = %q, want %q", tc.node, got, tc.want)
			}
		})
	}
}
