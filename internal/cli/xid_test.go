package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

const xidLog = `[    5.100000] usb 1-1: new high-speed USB device number 2 using xhci_hcd
[   12.002000] NVRM: GPU at PCI:0000:9b:00: GPU-0b1a1b2c-3d4e-5f60-7182-93a4b5c6d7e8
[   12.002001] NVRM: GPU Board Serial Number: 1653922000123
[16450076.435595] NVRM: Xid (PCI:0000:9B:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 5, subpartition 1.
[16450076.435702] NVRM: Xid (PCI:0000:9b:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row marked for remapping, reset gpu to activate.
[16450076.436011] NVRM: Xid (PCI:0000:9b:00): 45, pid=38211, name=python3, Ch 00000008
[16450090.000000] NVRM: Xid (PCI:0000:cb:00 GPU-I:02 GPU-CI:01): 31, pid=2345, name=infer, channel 0x00000009, intr 00000000. MMU Fault
[16450091.000000] NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.
May 18 19:02:40 gpu-node-07 myscript[4242]: NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.
`

func TestXIDDecodePrintsATableOfEveryEvent(t *testing.T) {
	path := writeFile(t, t.TempDir(), "kern.log", xidLog)
	r := execute(t, "xid", "decode", path)
	r.check(t, ExitOK, []string{
		"TIME", "DEVICE", "MIG", "SEVERITY", "ACTION",
		"0000:9b:00.0", "ROBUST_CHANNEL_GPU_ECC_DBE", "reset-gpu (drain first)",
		"GI 2 CI 1", "2345 infer",
		"79*", // derived: fallen off the bus without an Xid prefix
		"5 events on 3 devices, 1 of them consequence of another XID; worst severity: fatal",
	}, nil)
	if strings.Contains(r.stdout, "myscript") || strings.Count(r.stdout, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS") != 1 {
		t.Errorf("a line quoted by another program was decoded:\n%s", r.stdout)
	}
}

func TestXIDDecodeJSONHasTheDocumentedFields(t *testing.T) {
	path := writeFile(t, t.TempDir(), "kern.log", xidLog)
	r := execute(t, "xid", "decode", "--json", path)
	r.check(t, ExitOK, nil, nil)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 5 {
		t.Fatalf("want 5 JSON lines, got %d:\n%s", len(lines), r.stdout)
	}
	var objs []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", l, err)
		}
		for _, k := range []string{"xid", "pciBusID", "gpuInstance", "computeInstance", "pid", "process", "message",
			"mnemonic", "component", "severity", "action", "consequence"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%q lacks %q", l, k)
			}
		}
		objs = append(objs, m)
	}
	dbe, mig, consequence := objs[0], objs[3], objs[2]
	cases := []struct {
		name      string
		got, want any
	}{
		{"the bus id is normalised as sysfs writes it", dbe["pciBusID"], "0000:9b:00.0"},
		{"the device map names the GPU", dbe["uuid"], "GPU-0b1a1b2c-3d4e-5f60-7182-93a4b5c6d7e8"},
		{"an absent MIG instance is null", dbe["gpuInstance"], nil},
		{"an unknown pid is null", dbe["pid"], nil},
		{"an unknown process is null", dbe["process"], nil},
		{"48 with 63 drains first", dbe["drain"], true},
		{"a MIG GPU instance is a number", mig["gpuInstance"], float64(2)},
		{"a MIG compute instance is a number", mig["computeInstance"], float64(1)},
		{"a known pid is a number", mig["pid"], float64(2345)},
		{"the process is named", mig["process"], "infer"},
		{"the 45 after the 48 is a consequence", consequence["consequence"], true},
		{"the 45's cause is named", consequence["causedBy"], float64(48)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %#v, want %#v", tc.got, tc.want)
			}
		})
	}
}

func TestXIDDecodeReadsStandardInput(t *testing.T) {
	var out bytes.Buffer
	err := runXIDDecode(context.Background(), &xidDecodeOptions{output: outputFlags{output: formatJSON}}, "-", strings.NewReader(xidLog), &out, io.Discard)
	if err != nil || strings.Count(out.String(), "\n") != 5 {
		t.Errorf("err %v, output:\n%s", err, out.String())
	}
}

func TestXIDDecodeOfTextWithoutXIDsPrintsNoEvents(t *testing.T) {
	path := writeFile(t, t.TempDir(), "quiet.log", "[    5.1] usb 1-1: new device\n[    6.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n")
	execute(t, "xid", "decode", "--json", path).check(t, ExitOK, nil, nil)
	if r := execute(t, "xid", "decode", "--json", path); r.stdout != "" {
		t.Errorf("--json printed %q for a log without XIDs", r.stdout)
	}
	execute(t, "xid", "decode", path).check(t, ExitOK, []string{"no XID events in " + path}, nil)
}

func TestXIDBadUsageExitsTwo(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.log")
	cases := []struct {
		name     string
		args     []string
		inStderr string
	}{
		{"a file that does not exist", []string{"xid", "decode", missing}, "cannot read " + missing + ": no such file or directory"},
		{"a directory", []string{"xid", "decode", dir}, "cannot read " + dir + ": is a directory"},
		{"two files", []string{"xid", "decode", "a", "b"}, "accepts at most 1 arg"},
		{"a code that is not a number", []string{"xid", "explain", "seventy-nine"}, `XID "seventy-nine": want a non-negative number`},
		{"no code", []string{"xid", "explain"}, "accepts 1 arg"},
		{"an unknown xid subcommand", []string{"xid", "frobnicate"}, `unknown command "frobnicate"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := execute(t, tc.args...)
			r.check(t, ExitUsage, nil, []string{tc.inStderr, "Run 'gpunode --help' for usage."})
			if r.stdout != "" {
				t.Errorf("bad usage printed on stdout:\n%s", r.stdout)
			}
		})
	}
}

func TestXIDExplainShowsTheRowAndWhatGpunodeDoes(t *testing.T) {
	cases := []struct {
		name  string
		code  string
		inOut []string
	}{
		{"a double-bit error names its drain rule", "48", []string{"XID 48  ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error",
			"applies to:           A100, H100, B100, GB200", "WORKFLOW_XID_48", "CUDA 12.7; GPU driver R565",
			"component: memory", "severity:  critical", "action:    reset-gpu", "drain-then-reset:"}},
		{"fallen off the bus reboots the node", "79", []string{"RESTART_BM (reboot the node)", "component: pcie", "action:    reboot-node", "fallen-off-the-bus:"}},
		{"an unused code goes to the vendor", "61", []string{"none (unused on current GPUs)", "action:    service"}},
		{"a row without a bucket says so", "165", []string{"immediate action:     (none)", "severity:  warning"}},
		{"an unknown code gets the default", "999", []string{"XID 999 is not in gpunode's catalog", "severity:  warning", "action:    none"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			execute(t, "xid", "explain", tc.code).check(t, ExitOK, tc.inOut, nil)
		})
	}
}

func TestXIDExplainJSON(t *testing.T) {
	r := execute(t, "xid", "explain", "74", "--json")
	r.check(t, ExitOK, nil, nil)
	var got struct {
		XID       int    `json:"xid"`
		Mnemonic  string `json:"mnemonic"`
		Component string `json:"component"`
		Known     bool   `json:"known"`
		Rules     []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if got.XID != 74 || got.Mnemonic != "NVLINK_ERROR" || got.Component != "interconnect" || !got.Known || len(got.Rules) != 1 || got.Rules[0].Name != "nvlink-registers" {
		t.Errorf("got %+v", got)
	}
}

func TestXIDHelpHasExamples(t *testing.T) {
	for _, args := range [][]string{{"xid", "--help"}, {"xid", "decode", "--help"}, {"xid", "explain", "--help"}} {
		execute(t, args...).check(t, ExitOK, []string{"Examples:", "gpunode xid"}, nil)
	}
}
