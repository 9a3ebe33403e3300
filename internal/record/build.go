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
	naNotInThisRun = "not measured by node-local acceptance (layers L0 host and L1 hardware)"
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
		r.GPUs = gpus(f.GPU, rep.Results)
	}
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
		out = append(out, g)
	}
	for _, res := range results {
		if res.Status != accept.StatusWarn && res.Status != accept.StatusFail {
			continue
		}
		bad := badGPUs(res, s.Devices)
		for i := range out {
			if bad[out[i].Index] {
				out[i].Status = accept.Worse(out[i].Status, res.Status)
			}
		}
	}
	return out
}

// badGPUs returns the GPUs that made a warning or failing check warn or fail. A check's
// evidence has a line per GPU, "GPU N (UUID): finding", for the good GPUs as well as the
// bad; its message names the bad ones as "GPU N: …" (or the first of them, "and K more").
// A GPU is bad when the message names it, when its finding is the finding of a GPU the
// message names, or when an evidence line is about it alone ("GPU N: XID 48: …").
// Findings are compared whole, never searched for in the message: a good GPU's
// "answering" is part of a bad one's "not answering", and a finding may itself contain
// "): " (XID 13's "on (GPC 0, TPC 0, SM 0): …").
func badGPUs(res accept.Result, devs []gpu.Device) map[int]bool {
	bad := map[int]bool{}
	findings := map[int]string{}
	badFindings := map[string]bool{}
	for _, d := range devs {
		perGPU := fmt.Sprintf("GPU %d (%s): ", d.Index, d.UUID)
		alone := fmt.Sprintf("GPU %d:", d.Index)
		for _, e := range res.Evidence {
			if f, ok := strings.CutPrefix(e, perGPU); ok {
				findings[d.Index] = f
				if namesGPU(res.Message, d.Index) {
					bad[d.Index] = true
					badFindings[f] = true
				}
			} else if strings.HasPrefix(e, alone) {
				bad[d.Index] = true
			}
		}
	}
	for i, f := range findings {
		if badFindings[f] {
			bad[i] = true
		}
	}
	return bad
}

// namesGPU reports whether a check's message names GPU index as "GPU N:", at its start or
// after a space or punctuation ("GPU 1:" is not in "GPU 11:" nor in "vGPU 1:").
func namesGPU(msg string, index int) bool {
	tag := fmt.Sprintf("GPU %d:", index)
	for off := 0; ; {
		i := strings.Index(msg[off:], tag)
		if i < 0 {
			return false
		}
		at := off + i
		if at == 0 || !isWordByte(msg[at-1]) {
			return true
		}
		off = at + len(tag)
	}
}

func isWordByte(c byte) bool {
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
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
