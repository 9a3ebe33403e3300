package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// fakeTerminal makes isTerminal say yes for w alone (the test's stderr) until the test ends.
func fakeTerminal(t *testing.T, w io.Writer) {
	t.Helper()
	was := isTerminal
	isTerminal = func(x io.Writer) bool { return x == w }
	t.Cleanup(func() { isTerminal = was })
}

// TestALongCommandSaysWhatItDoesAtOnceAtATerminal: monitor, sim fleet and xid decode reading
// standard input tell a person at a terminal what they are doing before they have anything
// to print; piped, their stderr stays empty of it.
func TestALongCommandSaysWhatItDoesAtOnceAtATerminal(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		stdin  string
		notice string
	}{
		{"monitor says what it follows and for how long", []string{"monitor", "--sim", "h100x8", "--duration", "200ms", "--interval", "100ms"}, "",
			"monitoring the GPUs and the kernel log every 100ms for 200ms"},
		{"xid decode says it reads standard input", []string{"xid", "decode"}, "", "reading a kernel log from standard input"},
		{"sim fleet says it is starting the fleet", []string{"sim", "fleet", "--nodes", "2"}, "", "starting a simulated fleet of 2 nodes"},
	}
	for _, tc := range cases {
		for _, terminal := range []bool{true, false} {
			name := tc.name + map[bool]string{true: " (a terminal)", false: " (piped: nothing)"}[terminal]
			t.Run(name, func(t *testing.T) {
				t.Setenv("KUBEBUILDER_ASSETS", t.TempDir()) // sim fleet: no API server to start, it fails fast
				t.Setenv("K8S_ASSETS_CACHE", t.TempDir())
				var out, errOut bytes.Buffer
				if terminal {
					fakeTerminal(t, &errOut)
				}
				root := NewRootCommand()
				root.SetArgs(tc.args)
				root.SetIn(strings.NewReader(tc.stdin))
				root.SetOut(&out)
				root.SetErr(&errOut)
				_ = root.ExecuteContext(context.Background())
				first, _, _ := strings.Cut(errOut.String(), "\n")
				if !terminal {
					first = errOut.String()
				}
				if got := strings.Contains(first, tc.notice); got != terminal {
					t.Errorf("first stderr line %q: has %q = %v, want %v\nstderr:\n%s", first, tc.notice, got, terminal, errOut.String())
				}
			})
		}
	}
}
