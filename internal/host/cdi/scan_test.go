package cdi

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

const uuid0 = "GPU-00000000-0000-0000-0000-000000000000"
const uuid1 = "GPU-00000000-0000-0000-0000-000000000001"

// byIndex is an nvidia-ctk spec with index names; the UUIDs sit in annotations and hooks.
var byIndex = `---
cdiVersion: 0.6.0
kind: nvidia.com/gpu
devices:
- name: "0"
  annotations:
    uuid: ` + uuid0 + `
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
- name: "1"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia1
    hooks:
    - hookName: createContainer
      path: /usr/bin/nvidia-cdi-hook
      args: [nvidia-cdi-hook, chmod, --uuid, ` + strings.ToLower(uuid1) + `]
containerEdits:
  deviceNodes:
  - path: /dev/nvidiactl
`

const byUUIDJSON = `{"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","devices":[` +
	`{"name":"` + uuid0 + `","containerEdits":{"deviceNodes":[{"path":"/dev/nvidia0"}]}}]}`

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		in   string
		err  string
	}{
		{"an nvidia-ctk YAML spec is valid", byIndex, ""},
		{"a JSON spec is valid", byUUIDJSON, ""},
		{"an empty file is an error", "", "EOF"},
		{"an empty document has no spec", "---\n", "no spec data"},
		{"an unknown field is refused, as the runtime does", "cdiVersion: 0.6.0\nkind: a.com/b\nbogus: 1\n", "bogus"},
		{"an unknown version is refused", "cdiVersion: 9.9.9\nkind: a.com/b\ndevices: [{name: x, containerEdits: {env: [A=1]}}]\n", "invalid version"},
		{"a kind without vendor is refused", "cdiVersion: 0.6.0\nkind: gpu\ndevices: [{name: x, containerEdits: {env: [A=1]}}]\n", "vendor"},
		{"a device name with a slash is refused", "cdiVersion: 0.6.0\nkind: a.com/b\ndevices: [{name: x/y, containerEdits: {env: [A=1]}}]\n", "invalid character"},
		{"a device without edits is refused", "cdiVersion: 0.6.0\nkind: a.com/b\ndevices: [{name: x}]\n", "empty device edits"},
		{"two devices of one name are refused", "cdiVersion: 0.6.0\nkind: a.com/b\ndevices: [{name: x, containerEdits: {env: [A=1]}}, {name: x, containerEdits: {env: [A=1]}}]\n", "multiple device"},
		{"a spec without devices is refused", "cdiVersion: 0.6.0\nkind: a.com/b\ndevices: []\n", "no devices"},
		{"a device node of a bad type is refused", "cdiVersion: 0.6.0\nkind: a.com/b\ndevices: [{name: x, containerEdits: {deviceNodes: [{path: /dev/x, type: z}]}}]\n", "invalid type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if (err != nil) != (tc.err != "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("Parse error = %v, want %q", err, tc.err)
			}
		})
	}
}

func hostFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for p, d := range files {
		fsys[p] = &fstest.MapFile{Data: []byte(d)}
	}
	return fsys
}

func TestScan(t *testing.T) {
	devs := map[string]string{"dev/nvidia0": "", "dev/nvidia1": "", "dev/nvidiactl": ""}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range devs {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name  string
		files map[string]string
		uuids []string
		want  []SpecFile
	}{
		{"a spec matching the host is not stale", with(map[string]string{"etc/cdi/nvidia.yaml": byIndex}),
			[]string{uuid0, uuid1}, []SpecFile{{Path: "/etc/cdi/nvidia.yaml", Version: "0.6.0", Kind: "nvidia.com/gpu", Devices: []string{"0", "1"}}}},
		{"a UUID in a hook argument that is gone is stale, compared without case", with(map[string]string{"etc/cdi/nvidia.yaml": byIndex}),
			[]string{uuid0}, []SpecFile{{Path: "/etc/cdi/nvidia.yaml", Version: "0.6.0", Kind: "nvidia.com/gpu", Devices: []string{"0", "1"},
				Stale: []StaleRef{{Device: "1", Kind: RefGPUUUID, Missing: strings.ToLower(uuid1)}}}}},
		{"missing device nodes are stale, common edits included", map[string]string{"var/run/cdi/nvidia.json": byUUIDJSON, "etc/cdi/x.yaml": byIndex},
			nil, []SpecFile{
				{Path: "/etc/cdi/x.yaml", Version: "0.6.0", Kind: "nvidia.com/gpu", Devices: []string{"0", "1"}, Stale: []StaleRef{
					{Kind: RefDeviceNode, Missing: "/dev/nvidiactl"},
					{Device: "0", Kind: RefDeviceNode, Missing: "/dev/nvidia0"},
					{Device: "1", Kind: RefDeviceNode, Missing: "/dev/nvidia1"},
				}},
				{Path: "/var/run/cdi/nvidia.json", Priority: 1, Version: "0.5.0", Kind: "nvidia.com/gpu", Devices: []string{uuid0},
					Stale: []StaleRef{{Device: uuid0, Kind: RefDeviceNode, Missing: "/dev/nvidia0"}}},
			}},
		{"a hostPath is checked rather than the container path", map[string]string{"etc/cdi/a.yaml": "cdiVersion: 0.5.0\nkind: a.com/b\n" +
			"devices: [{name: x, containerEdits: {deviceNodes: [{path: /dev/x, hostPath: /dev/real-x}]}}]\n", "dev/x": ""},
			nil, []SpecFile{{Path: "/etc/cdi/a.yaml", Version: "0.5.0", Kind: "a.com/b", Devices: []string{"x"},
				Stale: []StaleRef{{Device: "x", Kind: RefDeviceNode, Missing: "/dev/real-x"}}}}},
		{"an invalid spec is reported with its error and still checked", with(map[string]string{"etc/cdi/bad.yaml": "cdiVersion: 0.6.0\nkind: nvidia.com/gpu\n" +
			"devices: [{name: " + uuid1 + "}]\n"}), []string{uuid0}, []SpecFile{{Path: "/etc/cdi/bad.yaml", Version: "0.6.0", Kind: "nvidia.com/gpu",
			Devices: []string{uuid1}, Stale: []StaleRef{{Device: uuid1, Kind: RefGPUUUID, Missing: uuid1}},
			Error: `invalid device "(40 bytes not shown)": empty device edits`}}}, // what a spec quotes is left out (redact.Quoted)
		{"unparsable YAML is reported", map[string]string{"etc/cdi/bad.yaml": ": : :"}, nil,
			[]SpecFile{{Path: "/etc/cdi/bad.yaml", Error: "failed to unmarshal CDI Spec: yaml: "}}},
		{"other files and sub-folders are skipped", map[string]string{"etc/cdi/notes.txt": "x", "etc/cdi/sub/x.yaml": byIndex}, nil, nil},
		{"no folders means no specs", nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := Scan(hostFS(tc.files), []string{"/etc/cdi", "/var/run/cdi"}, tc.uuids)
			// Errors are compared by their start: the rest is the YAML library's wording.
			for i := range rep.Specs {
				if i < len(tc.want) && tc.want[i].Error != "" && strings.HasPrefix(rep.Specs[i].Error, tc.want[i].Error) {
					rep.Specs[i].Error = tc.want[i].Error
				}
			}
			if !reflect.DeepEqual(rep.Specs, tc.want) || rep.UUIDsChecked != (tc.uuids != nil) || len(rep.DirErrors) > 0 {
				t.Errorf("Scan =\n %+v\nwant specs\n %+v", rep, tc.want)
			}
			if got := len(rep.Stale()); got != countStale(tc.want) {
				t.Errorf("Stale() = %d files, want %d", got, countStale(tc.want))
			}
		})
	}
}

func countStale(specs []SpecFile) int {
	n := 0
	for _, s := range specs {
		if len(s.Stale) > 0 {
			n++
		}
	}
	return n
}

func TestScanFindsDevicesDefinedTwice(t *testing.T) {
	fsys := hostFS(map[string]string{
		"etc/cdi/nvidia.yaml":     byIndex,
		"var/run/cdi/nvidia.yaml": byIndex,
		"var/run/cdi/other.json":  byUUIDJSON,
	})
	rep := Scan(fsys, []string{"/etc/cdi", "/var/run/cdi"}, nil)
	want := []Duplicate{
		{Device: "nvidia.com/gpu=0", Files: []string{"/etc/cdi/nvidia.yaml", "/var/run/cdi/nvidia.yaml"}},
		{Device: "nvidia.com/gpu=1", Files: []string{"/etc/cdi/nvidia.yaml", "/var/run/cdi/nvidia.yaml"}},
	}
	if !reflect.DeepEqual(rep.Duplicates, want) {
		t.Errorf("duplicates = %+v, want %+v", rep.Duplicates, want)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{byIndex, byUUIDJSON, "", "cdiVersion: 0.6.0\nkind: a.com/b\n", "devices: [null]\n",
		"containerEdits: {deviceNodes: [null], hooks: [null], mounts: [null]}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, err := Parse(data)
		if raw != nil {
			StaleRefs(raw, map[string]bool{}, func(string) bool { return false })
		}
		if err == nil && raw == nil {
			t.Fatal("no error and no spec")
		}
	})
}
