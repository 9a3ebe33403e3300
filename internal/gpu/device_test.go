package gpu

import (
	"errors"
	"fmt"
	"testing"
)

func TestUnreachableNamesOneReasonInAFixedOrder(t *testing.T) {
	lost := func(f Field) error { return fmt.Errorf("%s: %w", f, ErrGPULost) }
	cases := []struct {
		name string
		errs map[Field]error
		want string
	}{
		{"a device with every fact answers", nil, ""},
		{"a fact that is not supported is not a lost GPU", map[Field]error{FieldRowRemap: ErrNotSupported}, ""},
		{"a device that could not be opened is unreachable for that reason", map[Field]error{FieldDevice: errors.New("Unknown Error"), FieldECCErrors: lost(FieldECCErrors)}, "Unknown Error"},
		{"one lost read is the reason", map[Field]error{FieldPower: lost(FieldPower)}, "power: GPU is lost"},
		{"of several lost reads the first field by name is the reason", map[Field]error{
			FieldTemperature: lost(FieldTemperature), FieldECCErrors: lost(FieldECCErrors), FieldPower: lost(FieldPower), FieldRowRemap: lost(FieldRowRemap),
		}, "eccErrors: GPU is lost"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for range 50 { // map order changes from one iteration to the next; the answer must not
				d := &Device{}
				for f, err := range tc.errs {
					d.SetErr(f, err)
				}
				got := ""
				if e := d.Unreachable(); e != nil {
					got = e.Message
				}
				if got != tc.want {
					t.Fatalf("Unreachable() = %q, want %q", got, tc.want)
				}
			}
		})
	}
}
