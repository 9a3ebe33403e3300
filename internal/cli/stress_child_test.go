package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/stress"
)

func TestTheStressChildAnswersEachRequestLineWithAResultLine(t *testing.T) {
	in := strings.NewReader(`{"test":"p2p","gpus":[{"index":0}],"duration":1000000000}` + "\n" +
		`{"test":"fp32","gpus":[],"duration":1000000000}` + "\n")
	var out strings.Builder
	if err := runStressChild(context.Background(), &stressOptions{childGPUs: "0"}, in, &out); err != nil {
		t.Fatalf("the child ended with %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d result lines for 2 requests:\n%s", len(lines), out.String())
	}
	for i, l := range lines {
		var resp struct {
			Error struct{ Kind, Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &resp); err != nil {
			t.Fatalf("line %d %q is not JSON: %v", i, l, err)
		}
		if resp.Error.Kind != "bad-input" || !strings.Contains(resp.Error.Message, "GPUs") {
			t.Errorf("line %d: error %+v, want bad-input naming the GPU count", i, resp.Error)
		}
	}
}

func TestStressRunsInChildProcessesUnlessToldOtherwise(t *testing.T) {
	cases := []struct {
		name     string
		o        stressOptions
		children bool
	}{
		{"by default each GPU's tests run in a child process", stressOptions{}, true},
		{"--in-process runs them in the command's process", stressOptions{inProcess: true}, false},
		{"an injected fault goes to the children", stressOptions{fault: "trap:fp32:1"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			exec, err := tc.o.realExecutor()
			if err != nil {
				t.Fatal(err)
			}
			c, ok := exec.(*stress.Children)
			if ok != tc.children {
				t.Fatalf("executor %T, want children %v", exec, tc.children)
			}
			if !ok {
				return
			}
			args := strings.Join(c.Command([]stress.GPU{{Index: 3}}).Args[1:], " ")
			want := "stress --child-gpus 3"
			if tc.o.fault != "" {
				want += " --inject-fault " + tc.o.fault
			}
			if args != want {
				t.Fatalf("child arguments %q, want %q", args, want)
			}
		})
	}
}

func TestStressHelpHidesTheChildFlags(t *testing.T) {
	r := execute(t, "stress", "--help")
	r.check(t, ExitOK, []string{"--in-process"}, nil)
	for _, hidden := range []string{"--child-gpus", "--inject-fault"} {
		if strings.Contains(r.stdout, hidden) {
			t.Errorf("stress --help shows the internal flag %s", hidden)
		}
	}
	execute(t, "stress", "-q", "--inject-fault", "melt:fp32:0").check(t, ExitUsage, nil, []string{`--inject-fault "melt:fp32:0"`})
}
