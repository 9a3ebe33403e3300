package record

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/buildinfo"
	"github.com/gpunode/gpunode/internal/gpu"
)

// Input is what a record is built from.
type Input struct {
	Report *accept.Report
	Facts  *accept.Facts
	Policy PolicyRef
	Tool   buildinfo.Info
}

// Not-applicable reasons shared by several fields.
const (
	naNotInThisRun = "not run (gpunode accept --layers performance,frameworks runs layers L4 and L5)"
)

// Build assembles the record. It is pure: the same input gives the same record.
func Build(in Input) *Record {
	rep, f := in.Report, in.Facts
	r := &Record{
		APIVersion: APIVersion, Kind: Kind,
		Node: rep.Node, StartedAt: rep.StartedAt.UTC(), FinishedAt: rep.FinishedAt.UTC(),
		DurationSeconds: rep.FinishedAt.Sub(rep.StartedAt).Seconds(),
		Tool:            in.Tool, Policy: in.Policy, Layers: rep.Layers,
		Summary: rep.Summary, Checks: rep.Results, Result: ResultFailed,
	}
	if rep.Passed {
		r.Result = ResultPassed
	}
	if f.GPU != nil {
		r.Backend = f.GPU.Backend
		r.Driver = f.GPU.Driver
		r.GPUs = gpus(f.GPU, rep.Results)
	}
	r.Frameworks = f.Frameworks
	r.Template = template(r, f)
	r.ID = recordID(r)
	return r
}

// recordID is node, UTC start time and 8 hex digits of the record's content hash.
func recordID(r *Record) string {
	b, _ := json.Marshal(r)
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%s-%s-%s", sanitizeName(r.Node), r.StartedAt.Format("20060102T150405Z"), hex.EncodeToString(sum[:4]))
}

// sanitizeName keeps a node name usable in file and object names.
func sanitizeName(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for _, c := range s {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-.")
	if out == "" {
		return "node"
	}
	return out
}

func gpus(s *gpu.Snapshot, results []accept.Result) []GPU {
	out := make([]GPU, 0, len(s.Devices))
	for _, d := range s.Devices {
		g := GPU{Index: d.Index, UUID: d.UUID, Serial: d.Serial, Model: d.Name, MemoryMiB: d.Memory.TotalMiB,
			VBIOS: d.VBIOS, PCIBusID: d.PCI.BusID, Status: accept.StatusPass}
		if d.Err(gpu.FieldPCIeLink) == nil {
			g.PCIe = fmt.Sprintf("gen%d x%d (max gen%d x%d)", d.PCI.LinkGen, d.PCI.LinkWidth, d.PCI.LinkGenMax, d.PCI.LinkWidthMax)
		}
		// A GPU's status is the worst warning or failure the per-GPU checks gave it; node-level
		// checks (a wrong GPU count) and skips do not mark a GPU.
		for _, res := range results {
			for _, gr := range res.GPUs {
				if gr.Index == d.Index && (gr.Status == accept.StatusWarn || gr.Status == accept.StatusFail) {
					g.Status = accept.Worse(g.Status, gr.Status)
				}
			}
		}
		out = append(out, g)
	}
	return out
}

func resultByID(rs []accept.Result, id string) *accept.Result {
	for i := range rs {
		if rs[i].ID == id {
			return &rs[i]
		}
	}
	return nil
}

// checkLine is "message [status]" of one check, or a not-applicable field.
func checkLine(rs []accept.Result, ids ...string) string {
	var parts []string
	for _, id := range ids {
		if r := resultByID(rs, id); r != nil {
			parts = append(parts, fmt.Sprintf("%s: %s [%s]", strings.TrimPrefix(id, "hardware."), r.Message, r.Status))
		}
	}
	return strings.Join(parts, "; ")
}

func distinct(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func template(r *Record, f *accept.Facts) Template {
	t := Template{}
	t.Node = Field{Value: r.Node}
	rs := r.Checks
	var serials, vbios []string
	for _, g := range r.GPUs {
		serials = append(serials, g.Serial)
		vbios = append(vbios, g.VBIOS)
	}
	hostTemplate(&t, f.Host, f.HostErr, serials, distinct(vbios))
	if f.GPU != nil {
		t.DriverCUDA = Field{Value: checkLine(rs, "hardware.driver-version", "hardware.cuda-version")}
		t.GPUCountHealth = Field{Value: gpuHealthLine(r)}
		t.PCIeNVLinkNVSwitch = Field{Value: checkLine(rs, "hardware.pcie-link", "hardware.pcie-replays", "hardware.nvlink", "hardware.fabric")}
	} else {
		reason := "no GPU facts"
		if f.GPUErr != nil {
			reason = "no GPU facts: " + f.GPUErr.Error()
		}
		t.DriverCUDA = Field{NotApplicable: reason}
		t.GPUCountHealth = Field{NotApplicable: reason}
		t.PCIeNVLinkNVSwitch = Field{NotApplicable: reason}
	}
	t.OperatorDevicePlugin = Field{NotApplicable: "checked in the Kubernetes layer (L2) by the gpunode controller, not by node-local acceptance"}
	t.NICRDMA = Field{NotApplicable: "NIC and RDMA checks are not part of this release's node-local layers"}
	t.DCGMDiagnostics = Field{NotApplicable: "gpunode's own L1 checks stand in for DCGM level-1 diagnostics (see checks); DCGM was not run"}
	t.NCCLRDMAStorageBaseline = Field{NotApplicable: "interconnect layer (L4) " + naNotInThisRun}
	t.RepresentativeTraining = Field{NotApplicable: "frameworks layer (L5) " + naNotInThisRun}
	t.RepresentativeInference = Field{NotApplicable: "frameworks layer (L5) " + naNotInThisRun}
	layerTemplate(&t, rs)
	t.ResultEvidenceURI = Field{Value: fmt.Sprintf("%s: %d pass, %d warn, %d fail, %d skip", r.Result, r.Summary.Pass, r.Summary.Warn, r.Summary.Fail, r.Summary.Skip)}
	return t
}

func gpuHealthLine(r *Record) string {
	models := map[string]int{}
	var order []string
	healthy := 0
	for _, g := range r.GPUs {
		if models[g.Model] == 0 {
			order = append(order, g.Model)
		}
		models[g.Model]++
		if g.Status == accept.StatusPass {
			healthy++
		}
	}
	var parts []string
	for _, m := range order {
		parts = append(parts, fmt.Sprintf("%d × %s", models[m], m))
	}
	return fmt.Sprintf("%s; %d of %d without warnings or failures", strings.Join(parts, ", "), healthy, len(r.GPUs))
}
