package cli

import (
	"os"
	"strings"
	"testing"
)

func TestTheCommandReferenceIsFresh(t *testing.T) {
	want, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	if err := WriteReference(&got); err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Error("docs/cli.md is not what the commands print: run go generate ./internal/cli/")
	}
	for _, c := range []string{"## gpunode accept", "## gpunode explain node", "## gpunode sim inject", "--kubeconfig", "-o, --output"} {
		if !strings.Contains(got.String(), c) {
			t.Errorf("the reference lacks %q", c)
		}
	}
}
