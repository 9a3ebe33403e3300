package catalogfile

import (
	"strings"
	"testing"
)

const header = "xid\tmnemonic\tdescription\tapplies\timmediate\tinvestigatory\traises154\tcomponent\tseverity\taction\tnote\n"

func TestParseRejectsABadTable(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		inErr string
	}{
		{"a row with a missing column", header + "8\tX\tY\tY/Y/Y/Y\tRESTART_APP\t\t\tapplication\twarning\trestart-app\n", "t.tsv:2: 10 columns, want 11"},
		{"an unknown component", header + "8\tX\tY\tY/Y/Y/Y\tRESTART_APP\t\t\tgpuu\twarning\trestart-app\t\n", `t.tsv:2: XID 8: unknown component "gpuu"`},
		{"an unknown severity", header + "8\tX\tY\tY/Y/Y/Y\tRESTART_APP\t\t\tgpu\tbad\trestart-app\t\n", `t.tsv:2: XID 8: unknown severity "bad"`},
		{"an unknown action", header + "8\tX\tY\tY/Y/Y/Y\tRESTART_APP\t\t\tgpu\twarning\treboot\t\n", `t.tsv:2: XID 8: unknown action "reboot"`},
		{"an unknown bucket", header + "8\tX\tY\tY/Y/Y/Y\tRESTART_NOW\t\t\tgpu\twarning\tnone\t\n", `t.tsv:2: XID 8: unknown immediate-action bucket "RESTART_NOW"`},
		{"a duplicate XID", header + "# comment\n8\tX\tY\tY/Y/Y/Y\tIGNORE\t\t\tgpu\tinfo\tnone\t\n8\tX\tY\tY/Y/Y/Y\tIGNORE\t\t\tgpu\tinfo\tnone\t\n", "t.tsv:4: XID 8 again (first on line 3)"},
		{"a non-numeric XID", header + "eight\tX\tY\tY/Y/Y/Y\tIGNORE\t\t\tgpu\tinfo\tnone\t\n", `t.tsv:2: xid "eight": not a positive number`},
		{"a bad applies column", header + "8\tX\tY\tY/Y/Y\tIGNORE\t\t\tgpu\tinfo\tnone\t\n", `t.tsv:2: XID 8: applies "Y/Y/Y"`},
		{"a critical fault without an action", header + "8\tX\tY\tY/Y/Y/Y\tRESET_GPU\t\t\tgpu\tcritical\tnone\t\n", "t.tsv:2: XID 8: severity critical needs an action"},
		{"an info event that asks for an action", header + "8\tX\tY\tY/Y/Y/Y\tIGNORE\t\t\tgpu\tinfo\treset-gpu\t\n", "t.tsv:2: XID 8: severity info cannot require action reset-gpu"},
		{"an empty mnemonic", header + "8\t\tY\tY/Y/Y/Y\tIGNORE\t\t\tgpu\tinfo\tnone\t\n", "t.tsv:2: XID 8: mnemonic and description must not be empty"},
		{"a wrong header", "xid\tname\n", "t.tsv:1: header is"},
		{"no header", "# only a comment\n", "t.tsv: no header line"},
		{"no rows", header, "t.tsv: no rows"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.text), "t.tsv")
			if err == nil || !strings.Contains(err.Error(), tc.inErr) {
				t.Errorf("err = %v, want it to contain %q", err, tc.inErr)
			}
		})
	}
}

func TestParseSortsRowsAndRenderWritesAGeneratedFile(t *testing.T) {
	text := header +
		"79\tFALLEN\tGPU has fallen off the bus\tY/Y/Y/Y\tRESTART_BM\tCONTACT_SUPPORT\tR565\tpcie\tfatal\treboot-node\twhy\n" +
		"8\tIDLE\tGPU stopped processing\tY/N/Y/N\tRESTART_APP\t\t\tapplication\twarning\trestart-app\t\n"
	rows, err := Parse(strings.NewReader(text), "t.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].XID != 8 || rows[1].XID != 79 || rows[0].H100 || !rows[0].B100 {
		t.Fatalf("rows = %+v", rows)
	}
	src, err := Render(rows)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"// Code generated", "DO NOT EDIT.", "package xid", `Mnemonic: "FALLEN"`, `Action: "reboot-node"`, `Note: "why"`} {
		if !strings.Contains(string(src), want) {
			t.Errorf("generated source lacks %q:\n%s", want, src)
		}
	}
	if _, err := Render(nil); err == nil {
		t.Error("rendering nothing should fail")
	}
}
