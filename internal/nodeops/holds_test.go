package nodeops

import (
	"errors"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

var (
	t0 = time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Minute)
	t2 = t0.Add(2 * time.Minute)
)

func TestAdd(t *testing.T) {
	cases := []struct {
		name        string
		holds       Holds
		add         Hold
		want        Holds
		wantChanged bool
	}{
		{
			name:        "the first hold is added",
			add:         Hold{Owner: "remediation", Reason: "xid 79", Since: t0},
			want:        Holds{{Owner: "remediation", Reason: "xid 79", Since: t0}},
			wantChanged: true,
		},
		{
			name:        "a second owner is added and the holds stay sorted by owner",
			holds:       Holds{{Owner: "upgrade", Reason: "driver 580", Since: t0}},
			add:         Hold{Owner: "acceptance", Reason: "new node", Since: t1},
			want:        Holds{{Owner: "acceptance", Reason: "new node", Since: t1}, {Owner: "upgrade", Reason: "driver 580", Since: t0}},
			wantChanged: true,
		},
		{
			name:        "re-adding the same owner keeps the original since and updates the reason",
			holds:       Holds{{Owner: "remediation", Reason: "xid 79", Since: t0}},
			add:         Hold{Owner: "remediation", Reason: "reset failed", Since: t2},
			want:        Holds{{Owner: "remediation", Reason: "reset failed", Since: t0}},
			wantChanged: true,
		},
		{
			name:        "re-adding the same owner with the same reason changes nothing",
			holds:       Holds{{Owner: "remediation", Reason: "xid 79", Since: t0}},
			add:         Hold{Owner: "remediation", Reason: "xid 79", Since: t2},
			want:        Holds{{Owner: "remediation", Reason: "xid 79", Since: t0}},
			wantChanged: false,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.holds.Render()
			got, changed := Add(tc.holds, tc.add)
			if !got.Equal(tc.want) || changed != tc.wantChanged {
				t.Errorf("Add = %v, changed %v; want %v, changed %v", got, changed, tc.want, tc.wantChanged)
			}
			if tc.holds.Render() != before {
				t.Errorf("Add modified its input: %s, was %s", tc.holds.Render(), before)
			}
		})
	}
}

func TestRelease(t *testing.T) {
	two := Holds{{Owner: "acceptance", Reason: "new", Since: t0}, {Owner: "remediation", Reason: "xid 79", Since: t1}}
	cases := []struct {
		name        string
		holds       Holds
		owner       string
		want        Holds
		wantChanged bool
	}{
		{"releasing one of two holds keeps the other", two, "acceptance", Holds{{Owner: "remediation", Reason: "xid 79", Since: t1}}, true},
		{"releasing the last hold leaves none", Holds{{Owner: "upgrade", Since: t0}}, "upgrade", nil, true},
		{"release by a non-owner changes nothing", two, "operator", two, false},
		{"release of no holds changes nothing", nil, "operator", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.holds.Render()
			got, changed := Release(tc.holds, tc.owner)
			if !got.Equal(tc.want) || changed != tc.wantChanged {
				t.Errorf("Release = %v, changed %v; want %v, changed %v", got, changed, tc.want, tc.wantChanged)
			}
			if tc.holds.Render() != before {
				t.Errorf("Release modified its input: %s, was %s", tc.holds.Render(), before)
			}
		})
	}
}

func TestParseHolds(t *testing.T) {
	cases := []struct {
		name      string
		value     string
		want      Holds
		wantError string
	}{
		{"an absent annotation means no holds", "", nil, ""},
		{"an empty list means no holds", "[]", nil, ""},
		{
			"holds are read and sorted by owner",
			`[{"owner":"upgrade","reason":"u","since":"2026-11-29T17:01:00Z"},{"owner":"acceptance","reason":"a","since":"2026-11-29T17:00:00Z"}]`,
			Holds{{Owner: "acceptance", Reason: "a", Since: t0}, {Owner: "upgrade", Reason: "u", Since: t1}},
			"",
		},
		{"invalid JSON is malformed and names the node and the annotation", `{"owner":`, nil, `node "gpu-1" annotation gpunode.dev/holds: malformed holds annotation`},
		{"a hold without an owner is malformed", `[{"reason":"r","since":"2026-11-29T17:00:00Z"}]`, nil, "hold 0 has no owner"},
		{"an owner holding twice is malformed", `[{"owner":"a","since":"2026-11-29T17:00:00Z"},{"owner":"a","since":"2026-11-29T17:01:00Z"}]`, nil, `owner "a" holds twice`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseHolds("gpu-1", tc.value)
			if tc.wantError != "" {
				if err == nil || !errors.Is(err, ErrMalformedHolds) || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("ParseHolds error = %v, want a malformed error containing %q", err, tc.wantError)
				}
				return
			}
			if err != nil || !got.Equal(tc.want) {
				t.Errorf("ParseHolds = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestRenderRoundTripsAndIsEmptyForNoHolds(t *testing.T) {
	if got := Holds(nil).Render(); got != "" {
		t.Errorf("Render of no holds = %q, want empty (annotation removed)", got)
	}
	holds := Holds{{Owner: "upgrade", Reason: "u", Since: t1}, {Owner: v1alpha1.HoldOwnerAcceptance, Reason: "a", Since: t0}}
	rendered := holds.Render()
	want := `[{"owner":"acceptance","reason":"a","since":"2026-11-29T17:00:00Z"},{"owner":"upgrade","reason":"u","since":"2026-11-29T17:01:00Z"}]`
	if rendered != want {
		t.Errorf("Render = %s, want %s", rendered, want)
	}
	back, err := ParseHolds("n", rendered)
	if err != nil || back.Render() != rendered {
		t.Errorf("round trip = %v, %v", back, err)
	}
}

func TestOldestBreaksTiesByOwner(t *testing.T) {
	h, ok := Holds{{Owner: "b", Since: t0}, {Owner: "a", Since: t0}, {Owner: "c", Since: t2}}.Oldest()
	if !ok || h.Owner != "a" {
		t.Errorf("Oldest = %v, %v; want owner a", h, ok)
	}
}
