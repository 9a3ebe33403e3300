package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheAcceptTableNamesEveryFailingAndWarningGPU: on the 8-GPU preset with two narrow
// links, the table names each under its status with
// its UUID, serial and PCI address, never "(and N more GPUs)".
func TestTheAcceptTableNamesEveryFailingAndWarningGPU(t *testing.T) {
	scenario := filepath.Join(t.TempDir(), "links.yaml")
	err := os.WriteFile(scenario, []byte(`apiVersion: gpunode.dev/sim/v1
preset: h100x8
gpus:
  - index: 2
    pcie: {linkWidth: 8}
  - index: 6
    pcie: {linkWidth: 4}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	r := execute(t, "accept", "--sim", scenario, "--expect-gpus", "8")
	if r.code != ExitFail {
		t.Fatalf("exit %d, want %d; stderr %s", r.code, ExitFail, r.stderr)
	}
	var link []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, "hardware.pcie-link") || (len(link) > 0 && len(link) < 4 && strings.HasPrefix(l, "       ")) {
			link = append(link, l)
		}
	}
	text := strings.Join(link, "\n")
	for _, want := range []string{"hardware.pcie-link           GPU 2, GPU 6 fail",
		"GPU 2 FAIL: GPU-", "00000000:3A:00.0: gen5 x8, width below x16", "GPU 6 FAIL: GPU-", "x4, width below x16", "serial ", "fix: a link narrower"} {
		if !strings.Contains(text, want) {
			t.Errorf("the pcie-link rows lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(r.stdout, "more GPUs") {
		t.Errorf("a GPU hidden behind a count:\n%s", r.stdout)
	}
}
