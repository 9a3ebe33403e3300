package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/testenv"
)

func TestFileClearedLoad(t *testing.T) {
	cases := []struct {
		name    string
		content string // "" = no file
		wantOK  bool
		wantErr string
	}{
		{"a missing file is no set and no error", "", false, ""},
		{"a saved set is read", `{"version":1,"bootID":"b","lines":[{"line":"x","n":2,"by":"gpu-reset at t"}]}`, true, ""},
		{"a torn file is an error naming it", `{"version":1,"boo`, false, "not a cleared-XIDs file"},
		{"another version is an error naming it", `{"version":7,"bootID":"b","lines":[]}`, false, "want version 1"},
		{"a line without a count is an error naming it", `{"version":1,"bootID":"b","lines":[{"line":"x","n":0}]}`, false, "no text or no count"},
		{"an unknown field is an error naming it", `{"version":1,"bootID":"b","lines":[],"x":1}`, false, "unknown field"},
		{"a file past the size limit is an error naming it", `{"version":1,"bootID":"` + strings.Repeat("b", 5<<20) + `"}`, false, "larger than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "cleared-xids.json")
			if tc.content != "" {
				if err := os.WriteFile(p, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, ok, err := agent.FileCleared{Path: p}.Load()
			if ok != tc.wantOK || (err != nil) != (tc.wantErr != "") {
				t.Fatalf("Load = ok %v, err %v", ok, err)
			}
			if err != nil && (!strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), p)) {
				t.Fatalf("error %q must say %q and name %s", err, tc.wantErr, p)
			}
		})
	}
}

func TestAnUnusableClearedFileIsReplacedAndEveryXIDIsJudgedAgain(t *testing.T) {
	_, c := testenv.Start(t)
	name, cfg, b := remediationAgent(t, c)
	path := filepath.Join(t.TempDir(), "cleared-xids.json")
	if err := os.WriteFile(path, []byte("{torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Cleared = agent.FileCleared{Path: path}
	if err := b.Inject(sim.Fault{Type: sim.FaultXID, GPU: 4, XID: 95}); err != nil {
		t.Fatal(err)
	}
	start(t, cfg)
	healthIs(t, c, name, 4, v1alpha1.HealthUnhealthy) // judged: not forgotten, and the agent runs
	set, ok, err := agent.FileCleared{Path: path}.Load()
	if err != nil || !ok || set.BootID != b.BootID() || len(set.Lines) != 0 {
		t.Fatalf("the file after the start holds %+v, %v, %v; want an empty set of boot %s", set, ok, err, b.BootID())
	}
}
