package agent_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/record"
)

func TestARecordIsCutToTheLimitsOfTheAPI(t *testing.T) {
	start := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	r := &record.Record{
		ID: strings.Repeat("N", 300) + "-20260102T150405Z-abcdef12", Node: "n1", Result: record.ResultFailed,
		StartedAt: start, FinishedAt: start.Add(1500 * time.Millisecond), Backend: "sim",
		Policy:   record.PolicyRef{Name: "default", Source: "built-in", SHA256: strings.Repeat("a", 64)},
		Template: record.Template{Node: record.Field{Value: "n1"}},
	}
	for i := range 300 {
		r.Checks = append(r.Checks, accept.Result{ID: fmt.Sprintf("hardware.c%d", i), Layer: accept.LayerHardware, Status: accept.StatusPass, Message: "ok"})
	}
	r.Checks[0].Message = strings.Repeat("é", 2000) // 4000 bytes, cut on a character boundary
	for i := range 20 {
		r.Checks[0].Evidence = append(r.Checks[0].Evidence, fmt.Sprintf("%d %s", i, strings.Repeat("x", 600)))
	}
	obj := agent.RecordObject(r, 3)
	c0 := obj.Spec.Checks[0]
	checks := []struct {
		what string
		ok   bool
	}{
		{"the name is the ID in lower case, cut to 253 characters from the front",
			len(obj.Name) == 253 && strings.HasSuffix(obj.Name, "-20260102t150405z-abcdef12") && obj.Name == strings.ToLower(obj.Name)},
		{"at most MaxChecks checks", len(obj.Spec.Checks) == v1alpha1.MaxChecks},
		{"at most MaxEvidenceLines lines, the rest counted", len(c0.Evidence) == v1alpha1.MaxEvidenceLines && c0.EvidenceOmitted == 4},
		{"evidence lines cut to MaxEvidenceLineLength", len(c0.Evidence[0]) <= v1alpha1.MaxEvidenceLineLength && strings.HasSuffix(c0.Evidence[0], "…")},
		{"the message is cut to 2048 bytes of valid UTF-8", len(c0.Message) <= 2048 && utf8.ValidString(c0.Message)},
		{"an empty template field says why", obj.Spec.Template.DCGMDiagnostics.NotApplicable != "" && obj.Spec.Template.Node.Value == "n1"},
		{"the generation answered is carried", obj.Spec.AcceptanceGeneration == 3},
		{"the duration is in milliseconds", obj.Spec.DurationMilliseconds == 1500},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not so", c.what)
		}
	}
	if s := agent.Summary(obj); s.RecordName != obj.Name || s.Generation != 3 || s.Result != v1alpha1.AcceptanceFailed {
		t.Errorf("Summary = %+v", s)
	}
}
