package agent

import (
	"fmt"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/record"
)

// maxNameLength is the longest object name (a DNS subdomain).
const maxNameLength = 253

// notMeasured fills a template field the run left empty (the API wants a value or a reason).
const notMeasured = "not measured by this run (its layers did not cover it)"

// RecordObject converts an acceptance record into the AcceptanceRecord the agent publishes
// for generation gen, cut to the API's limits: at most MaxGPUs GPUs and MaxChecks checks,
// MaxEvidenceLines evidence lines per check (the rest counted in EvidenceOmitted), and every
// string to its field's maximum length. The object's name is the record ID in lower case.
func RecordObject(r *record.Record, gen int64) *v1alpha1.AcceptanceRecord {
	backend := r.Backend
	if backend != "sim" {
		backend = "nvml"
	}
	spec := v1alpha1.AcceptanceRecordSpec{
		Node:                 cut(r.Node, maxNameLength),
		AcceptanceGeneration: gen,
		Result:               v1alpha1.AcceptanceResult(r.Result),
		StartedAt:            metav1.NewTime(r.StartedAt),
		FinishedAt:           metav1.NewTime(r.FinishedAt),
		DurationMilliseconds: max(r.FinishedAt.Sub(r.StartedAt).Milliseconds(), 0),
		Tool:                 v1alpha1.ToolRef{Version: cut(r.Tool.Version, 64), Commit: cut(r.Tool.Commit, 64)},
		Policy:               v1alpha1.PolicyRef{Name: cut(r.Policy.Name, maxNameLength), Source: cut(r.Policy.Source, 1024), SHA256: r.Policy.SHA256},
		Backend:              backend,
		Template:             template(r.Template),
		Summary:              summary(r.Summary),
		Stack:                stack(r),
		Performance:          performance(r),
	}
	for _, l := range r.Layers {
		spec.Layers = append(spec.Layers, v1alpha1.Layer(l))
	}
	for i, g := range r.GPUs {
		if i == v1alpha1.MaxGPUs {
			break
		}
		spec.GPUs = append(spec.GPUs, v1alpha1.RecordGPU{
			Index: int32(g.Index), UUID: cut(g.UUID, 64), Serial: cut(g.Serial, 64), Model: cut(g.Model, 128),
			MemoryMiB: int64(min(g.MemoryMiB, 1<<62)), VBIOS: cut(g.VBIOS, 64), PCIBusID: cut(g.PCIBusID, 32),
			PCIe: cut(g.PCIe, 64), Status: v1alpha1.CheckStatus(g.Status),
		})
	}
	for i, c := range r.Checks {
		if i == v1alpha1.MaxChecks {
			break
		}
		spec.Checks = append(spec.Checks, check(c))
	}
	return &v1alpha1.AcceptanceRecord{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "AcceptanceRecord"},
		ObjectMeta: metav1.ObjectMeta{Name: recordName(r.ID), Labels: nodeLabel(r.Node)},
		Spec:       spec,
	}
}

// recordName is the record ID in lower case (an object name is a lowercase DNS subdomain;
// the ID's time reads "20260102t150405z"), within the name limit: a long ID loses the start
// of its node part (it ends in its start time and content hash, which keep it unique).
func recordName(id string) string {
	id = strings.ToLower(id)
	if len(id) <= maxNameLength {
		return id
	}
	return id[len(id)-maxNameLength:]
}

func check(c accept.Result) v1alpha1.Check {
	out := v1alpha1.Check{
		ID: cut(c.ID, 128), Layer: v1alpha1.Layer(c.Layer), Title: cut(c.Title, 256),
		Status: v1alpha1.CheckStatus(c.Status), Message: cut(c.Message, 2048), Fix: cut(c.Fix, 2048),
	}
	for i, e := range c.Evidence {
		if i == v1alpha1.MaxEvidenceLines {
			out.EvidenceOmitted = int32(len(c.Evidence) - i)
			break
		}
		out.Evidence = append(out.Evidence, cut(e, v1alpha1.MaxEvidenceLineLength))
	}
	return out
}

func summary(s accept.Summary) v1alpha1.CheckSummary {
	return v1alpha1.CheckSummary{Pass: int32(s.Pass), Warn: int32(s.Warn), Fail: int32(s.Fail), Skip: int32(s.Skip)}
}

func template(t record.Template) v1alpha1.Template {
	f := func(in record.Field) v1alpha1.TemplateField {
		if in.Value != "" {
			return v1alpha1.TemplateField{Value: cut(in.Value, 2048)}
		}
		if in.NotApplicable != "" {
			return v1alpha1.TemplateField{NotApplicable: cut(in.NotApplicable, 1024)}
		}
		return v1alpha1.TemplateField{NotApplicable: notMeasured}
	}
	return v1alpha1.Template{
		Node: f(t.Node), HardwareSKUSerial: f(t.HardwareSKUSerial), Firmware: f(t.Firmware),
		OSKernel: f(t.OSKernel), ContainerdKubelet: f(t.ContainerdKubelet), DriverCUDA: f(t.DriverCUDA),
		OperatorDevicePlugin: f(t.OperatorDevicePlugin), NICRDMA: f(t.NICRDMA), GPUCountHealth: f(t.GPUCountHealth),
		PCIeNVLinkNVSwitch: f(t.PCIeNVLinkNVSwitch), DCGMDiagnostics: f(t.DCGMDiagnostics),
		NCCLRDMAStorageBaseline: f(t.NCCLRDMAStorageBaseline), RepresentativeTraining: f(t.RepresentativeTraining),
		RepresentativeInference: f(t.RepresentativeInference), ResultEvidenceURI: f(t.ResultEvidenceURI),
	}
}

// Summary is the status.lastAcceptance entry for a published record.
func Summary(obj *v1alpha1.AcceptanceRecord) *v1alpha1.AcceptanceSummary {
	return &v1alpha1.AcceptanceSummary{
		RecordName: obj.Name, Generation: obj.Spec.AcceptanceGeneration, Result: obj.Spec.Result,
		Time: obj.Spec.FinishedAt, Summary: obj.Spec.Summary,
	}
}

// cut shortens s to at most n bytes without splitting a UTF-8 character, marking the cut
// with "…" when there is room for it.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	keep := n - len(mark)
	if keep < 0 {
		keep, n = n, 0
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	if n == 0 {
		return s[:keep]
	}
	return s[:keep] + mark
}

// describe names a record for logs.
func describe(obj *v1alpha1.AcceptanceRecord) string {
	return fmt.Sprintf("%s (generation %d, %s)", obj.Name, obj.Spec.AcceptanceGeneration, obj.Spec.Result)
}

// nodeLabel is the record's gpunode.dev/node label; none when the node name is not a valid
// label value (longer than 63 characters): the controller then reads the node from the name.
func nodeLabel(node string) map[string]string {
	if node == "" || len(node) > 63 {
		return nil
	}
	return map[string]string{v1alpha1.LabelNode: node}
}
