package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/record"
)

func TestAcceptOutputDirWritesTheRecordAsJSONAndMarkdown(t *testing.T) {
	cases := []struct {
		name string
		code int
		sim  func(t *testing.T) string
		want string
	}{
		{"a passing node's record", ExitOK, func(*testing.T) string { return "h100x8" }, record.ResultPassed},
		{"a failing node's record is written too", ExitFail, func(t *testing.T) string {
			return writeFile(t, t.TempDir(), "remap.yaml", scenarioRowRemap)
		}, record.ResultFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "records")
			r := execute(t, "accept", "-q", "--sim", tc.sim(t), "--node-name", "test-node", "--output-dir", dir)
			r.check(t, tc.code, nil, []string{"record written: " + dir})
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatalf("output folder: %v", err)
			}
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			sort.Strings(names)
			if len(names) != 2 || !strings.HasSuffix(names[0], ".json") || strings.TrimSuffix(names[0], ".json")+".md" != names[1] {
				t.Fatalf("output folder holds %v, want exactly <id>.json and <id>.md", names)
			}
			jsonPath := filepath.Join(dir, names[0])
			data, err := os.ReadFile(jsonPath)
			if err != nil {
				t.Fatal(err)
			}
			var rec record.Record
			if err := json.Unmarshal(data, &rec); err != nil {
				t.Fatalf("%s does not parse: %v", jsonPath, err)
			}
			if rec.ID+".json" != names[0] || rec.Result != tc.want || rec.APIVersion != record.APIVersion {
				t.Errorf("record id %q result %q apiVersion %q in %s", rec.ID, rec.Result, rec.APIVersion, names[0])
			}
			if uri := rec.Template.ResultEvidenceURI.Value; !strings.Contains(uri, "file://"+jsonPath) {
				t.Errorf("resultEvidenceUri %q does not name %s", uri, jsonPath)
			}
			md, err := os.ReadFile(filepath.Join(dir, names[1]))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			if !strings.Contains(string(md), hex.EncodeToString(sum[:])) {
				t.Errorf("the Markdown does not carry the JSON's sha256 %x", sum)
			}
		})
	}
}

func TestAcceptOutputDirThatCannotBeCreatedFails(t *testing.T) {
	blocker := writeFile(t, t.TempDir(), "file", "x")
	dir := filepath.Join(blocker, "records")
	r := execute(t, "accept", "-q", "--sim", "h100x8", "--output-dir", dir)
	r.check(t, ExitFail, nil, []string{"record folder " + dir})
}

// dmesg lines as `dmesg` prints them, for the sim h100x8's GPU 0 (bus 00000000:18:00.0).
const (
	dmesgXID48 = "[  812.104221] NVRM: Xid (PCI:0000:18:00): 48, pid='<unknown>', name=<unknown>, " +
		"An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 1, subpartition 0.\n"
	dmesgXID13 = "[  903.551002] NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python3, " +
		"Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address\n"
	dmesgNoise = "[    0.000000] Linux version 5.15.0-113-generic (buildd@lcy02-amd64-048)\n" +
		"[   14.220007] nvidia-nvlink: Nvlink Core is being initialized, major device number 511\n"
)

func TestAcceptReadsXIDsFromAKernelLogFile(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name      string
		kernelLog string
		code      int
		inStdout  []string
	}{
		{"an XID 48 on GPU 0 fails the XID check and the node",
			writeFile(t, dir, "dmesg-48.txt", dmesgNoise+dmesgXID48), ExitFail,
			[]string{"FAIL   hardware.xid-since-boot", "XID 48 ×1", "FAILED:"}},
		{"an application XID 13 only warns and the node passes",
			writeFile(t, dir, "dmesg-13.txt", dmesgNoise+dmesgXID13), ExitOK,
			[]string{"WARN   hardware.xid-since-boot", "XID 13 ×1 (application-level only)", "PASSED:"}},
		{"a kernel log without NVRM lines passes the XID check",
			writeFile(t, dir, "dmesg-clean.txt", dmesgNoise), ExitOK,
			[]string{"PASS   hardware.xid-since-boot", "no XID errors in the kernel log since boot"}},
		{"--kernel-log none skips the XID check and says why",
			"none", ExitOK,
			[]string{"SKIP   hardware.xid-since-boot", "kernel log not readable: not read (--kernel-log none)", "PASSED:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := execute(t, "accept", "-q", "--sim", "h100x8", "--node-name", "test-node", "--kernel-log", tc.kernelLog)
			r.check(t, tc.code, tc.inStdout, nil)
			if n := strings.Count(r.stdout, "\nFAIL "); n > 1 {
				t.Errorf("%d checks failed; a kernel log can fail only the XID check:\n%s", n, r.stdout)
			}
		})
	}
}

func TestAcceptAttributesKernelLogXIDsToTheirGPU(t *testing.T) {
	kernelLog := writeFile(t, t.TempDir(), "dmesg.txt", dmesgXID48)
	r := execute(t, "accept", "-q", "--sim", "h100x8", "--node-name", "test-node", "--kernel-log", kernelLog, "--format", "json")
	r.check(t, ExitFail, nil, nil)
	var rec record.Record
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil {
		t.Fatalf("stdout is not JSON: %v", err)
	}
	for _, g := range rec.GPUs {
		want := "pass"
		if g.Index == 0 {
			want = "fail"
		}
		if string(g.Status) != want {
			t.Errorf("GPU %d (%s): status %s, want %s", g.Index, g.PCIBusID, g.Status, want)
		}
	}
}
