package deviceplugin

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/labels"
)

const fullConfig = `version: v1
flags:
  migStrategy: mixed
  plugin:
    deviceListStrategy: cdi-cri
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
    - name: nvidia.com/mig-1g.10gb
      rename: example.com/small-gpu
      replicas: 2
`

func TestParseConfigReadsNVIDIAsTimeSlicingFields(t *testing.T) {
	got, err := ParseConfig("dp.yaml", []byte(fullConfig))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	want := Sharing{MIGStrategy: MIGMixed, Strategy: StrategyCDICRI, TimeSlicing: TimeSlicing{
		RenameByDefault: true, FailRequestsGreaterThanOne: true,
		Resources: []Replicated{{Name: ResourceName, Replicas: 4}, {Name: "nvidia.com/mig-1g.10gb", Rename: "example.com/small-gpu", Replicas: 2}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseConfig = %+v, want %+v", got, want)
	}
}

func TestParseConfigNamesTheLineOfEachMistake(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"an empty file is refused", "", "dp.yaml: empty configuration"},
		{"a missing version is refused", "flags: {migStrategy: none}\n", `dp.yaml:1: version ""`},
		{"another version is refused at its line", "\nversion: v2\n", `dp.yaml:2: version "v2": want v1`},
		{"an unknown MIG strategy is refused", "version: v1\nflags:\n  migStrategy: split\n", `dp.yaml:3: migStrategy "split"`},
		{"an unknown list strategy is refused", "version: v1\nflags:\n  plugin:\n    deviceListStrategy: volume-mounts\n", `dp.yaml:4: deviceListStrategy "volume-mounts"`},
		{"an unknown key is refused with its line", "version: v1\nsharing:\n  mps: {}\n", "dp.yaml:3: field mps not found"},
		{"a wrong type is refused with its line", "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: maybe\n", "dp.yaml:4: cannot unmarshal"},
		{"a resource gpunode does not advertise is refused", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: amd.com/gpu\n      replicas: 2\n", `dp.yaml:5: resource name "amd.com/gpu"`},
		{"zero replicas are refused at their line", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 0\n", "dp.yaml:6: replicas 0"},
		{"too many replicas are refused", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 100000\n", "dp.yaml:6: replicas 100000: want at most 256"},
		{"a bad rename is refused", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      rename: shared\n      replicas: 2\n", `dp.yaml:6: rename "shared"`},
		{"a resource shared twice is refused", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n    - name: nvidia.com/gpu\n      replicas: 3\n", "dp.yaml:7: resource nvidia.com/gpu is shared twice (first at line 5)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig("dp.yaml", []byte(c.data))
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("ParseConfig error %v, want a ConfigError containing %q", err, c.want)
			}
		})
	}
}

func TestTheNodeLabelOverridesTheReplicas(t *testing.T) {
	file := Sharing{TimeSlicing: TimeSlicing{Resources: []Replicated{{Name: "nvidia.com/mig-1g.10gb", Replicas: 2}, {Name: ResourceName, Replicas: 4}}}}
	cases := []struct {
		name    string
		in      Sharing
		label   string
		want    int
		wantErr bool
	}{
		{"no label keeps the file's replicas", file, "", 4, false},
		{"the label replaces the file's replicas", file, "8", 8, false},
		{"the label adds sharing to a file without it", Sharing{}, "3", 3, false},
		{"the label 1 turns sharing off", file, "1", 1, false},
		{"a label that is not a number is an error", file, "many", 0, true},
		{"a label above the bound is an error", file, "1000", 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := map[string]string{}
			if c.label != "" {
				node[labels.KeyReplicasOverride] = c.label
			}
			got, err := c.in.WithNodeLabels(node)
			if c.wantErr {
				if err == nil || !strings.Contains(err.Error(), labels.KeyReplicasOverride) {
					t.Errorf("WithNodeLabels error %v, want one naming the label", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range got.TimeSlicing.Resources {
				if r.Name == ResourceName {
					n = r.Replicas
				}
			}
			if n != c.want {
				t.Errorf("replicas %d, want %d", n, c.want)
			}
		})
	}
	if file.TimeSlicing.Resources[1].Replicas != 4 {
		t.Error("WithNodeLabels changed the configuration it was given")
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(fullConfig))
	f.Add([]byte("version: v1\n"))
	f.Add([]byte("version: v1\nsharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2}]}}\n"))
	f.Add([]byte("version: v1\nflags: [1, 2]\n"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseConfig("fuzz.yaml", data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a ConfigError", err)
			}
			return
		}
		for _, r := range s.TimeSlicing.Resources {
			if r.Replicas < 1 || r.Replicas > maxReplicas || !resourceRE.MatchString(r.Name) {
				t.Fatalf("accepted an invalid resource %+v", r)
			}
		}
		if _, err := Resources(nil, s); err != nil {
			t.Fatalf("an accepted configuration is refused by Resources: %v", err)
		}
	})
}
