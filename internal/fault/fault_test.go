package fault

import "testing"

func TestOrdering(t *testing.T) {
	cases := []struct {
		name string
		got  any
		want any
	}{
		{"a reset is more disruptive than restarting the app", Max(ActionRestartApp, ActionResetGPU), ActionResetGPU},
		{"service outranks a reboot whichever comes first", Max(ActionService, ActionRebootNode), ActionService},
		{"an unknown action never wins", Max(ActionNone, Action("bogus")), ActionNone},
		{"fatal outranks critical", MaxSeverity(SeverityFatal, SeverityCritical), SeverityFatal},
		{"warning outranks info", MaxSeverity(SeverityInfo, SeverityWarning), SeverityWarning},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestParseRejectsUnknownNames(t *testing.T) {
	if _, err := ParseAction("reboot"); err == nil {
		t.Error("ParseAction(reboot) accepted")
	}
	if a, err := ParseAction("reboot-node"); err != nil || a != ActionRebootNode {
		t.Errorf("ParseAction(reboot-node) = %v, %v", a, err)
	}
	if _, err := ParseSeverity("bad"); err == nil {
		t.Error("ParseSeverity(bad) accepted")
	}
	if _, err := ParseComponent("gpu"); err != nil {
		t.Error(err)
	}
}
