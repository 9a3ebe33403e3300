package redact

import (
	"testing"
)

func TestRedactLeavesOutWhatIsQuoted(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"a message without quotes is kept", "open etc/x: no such file or directory", "open etc/x: no such file or directory"},
		{"a Go-quoted value is left out with its length", `parse /proc/sys/kernel/tainted "hunter2": not a number`, `parse /proc/sys/kernel/tainted "(7 bytes not shown)": not a number`},
		{"an escaped quote does not end the value", `bad "a\"b" here`, `bad "(4 bytes not shown)" here`},
		{"the YAML library's backquotes are left out", "line 3: cannot unmarshal !!str `s3cr3t` into int", "line 3: cannot unmarshal !!str `(6 bytes not shown)` into int"},
		{"an unclosed quote leaves out the rest", `bad "secret and more`, `bad "(15 bytes not shown)`},
		{"two values are both left out", `"a" and "bb"`, `"(1 bytes not shown)" and "(2 bytes not shown)"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Quoted(tc.in); got != tc.want {
				t.Errorf("Quoted(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
