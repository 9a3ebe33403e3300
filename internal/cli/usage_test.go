package cli

import (
	"path/filepath"
	"testing"
)

// gnpHeader starts a GPUNodePolicy file whose spec follows from line 6.
const gnpHeader = "apiVersion: gpunode.dev/v1alpha1\nkind: GPUNodePolicy\nmetadata:\n  name: x\nspec:\n"

func TestABadPolicyFileExitsTwoNamingTheFileAndLine(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name     string
		path     string
		inStderr []string
	}{
		{"a missing file", filepath.Join(dir, "missing.yaml"), []string{"cannot read", "no such file"}},
		{"a YAML syntax error", writeFile(t, dir, "syntax.yaml", gnpHeader+"  classes:\n    - class: a\n      model: a: b\n"),
			[]string{"line 8: mapping values are not allowed"}},
		{"an unknown field", writeFile(t, dir, "unknown.yaml", gnpHeader+"  classes:\n    - class: a\n      gpuz: 3\n"),
			[]string{`line 8: unknown field "gpuz" in spec.classes[0]`}},
		{"a value outside its enum", writeFile(t, dir, "enum.yaml", gnpHeader+"  acceptance:\n    host:\n      iommu: maybe\n"),
			[]string{`line 8: spec.acceptance.host.iommu: "maybe" is not one of any, enabled, passthrough, disabled`}},
		{"an unsupported apiVersion", writeFile(t, dir, "api.yaml", "apiVersion: gpunode.dev/v9\nkind: GPUNodePolicy\n"),
			[]string{"line 1: apiVersion", "gpunode.dev/v1alpha1"}},
		{"a file of the earlier AcceptancePolicy kind", writeFile(t, dir, "old.yaml", "apiVersion: gpunode.dev/v1alpha1\nkind: AcceptancePolicy\nname: x\n"),
			[]string{"line 2: kind AcceptancePolicy is no longer read: write the policy as a GPUNodePolicy", "docs/policy.md"}},
		{"a policy of several classes without --class", writeFile(t, dir, "classes.yaml", gnpHeader+"  classes:\n    - class: a\n    - class: b\n"),
			[]string{"the policy lists classes a, b: choose one with --class"}},
		{"an empty file", writeFile(t, dir, "empty.yaml", ""), []string{"file is empty"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := execute(t, "accept", "-q", "--sim", "h100x8", "--policy", tc.path)
			r.check(t, ExitUsage, nil, append([]string{"gpunode: policy " + tc.path + ": "}, tc.inStderr...))
			if r.stdout != "" {
				t.Errorf("a bad policy printed on stdout:\n%s", r.stdout)
			}
		})
	}
}

func TestAGoodPolicyFileIsNamedInTheRecord(t *testing.T) {
	path := writeFile(t, t.TempDir(), "policy.yaml",
		"apiVersion: gpunode.dev/v1alpha1\nkind: GPUNodePolicy\nmetadata:\n  name: h100-fleet\nspec:\n  classes:\n    - class: h100\n      gpus: 8\n      model: NVIDIA H100 80GB HBM3\n")
	r := execute(t, "accept", "-q", "--sim", "h100x8", "--policy", path, "--format", "markdown")
	r.check(t, ExitOK, []string{"policy `h100-fleet` (" + path + ")", "8 GPUs, as expected"}, nil)
	if r.stderr != "" {
		t.Errorf("a policy the run uses whole printed on stderr:\n%s", r.stderr)
	}
}

func TestAPolicyFieldTheNodeLocalRunDoesNotUseIsNamedOnStderr(t *testing.T) {
	path := writeFile(t, t.TempDir(), "policy.yaml", gnpHeader+"  nodeSelector:\n    matchLabels: {pool: a}\n  agentLostAfter: 5m\n  classes:\n    - class: h100\n      gpus: 8\n")
	r := execute(t, "accept", "-q", "--sim", "h100x8", "--policy", path)
	r.check(t, ExitOK, nil, []string{
		"policy " + path + ": not used by a node-local run: spec.nodeSelector and spec.priority",
		"policy " + path + ": not used by a node-local run: spec.agentLostAfter",
	})
}

func TestAClassOfThePolicyIsChosenWithClass(t *testing.T) {
	path := writeFile(t, t.TempDir(), "fleet.yaml", gnpHeader+"  classes:\n    - class: h100\n      gpus: 8\n    - class: small\n      gpus: 4\n")
	r := execute(t, "accept", "-q", "--sim", "h100x8", "--policy", path, "--class", "small")
	r.check(t, ExitFail, []string{"8 GPUs found, 4 expected"}, nil)
	r = execute(t, "accept", "-q", "--sim", "h100x8", "--class", "small")
	r.check(t, ExitUsage, nil, []string{"--class small: only with --policy"})
}

func TestABadScenarioOrPresetExitsTwoNamingIt(t *testing.T) {
	dir := t.TempDir()
	badType := writeFile(t, dir, "bad-type.yaml", "apiVersion: gpunode.dev/sim/v1\npreset: h100x8\nfaults:\n  - gpu: 2\n    type: xidd\n")
	badPreset := writeFile(t, dir, "bad-preset.yaml", "apiVersion: gpunode.dev/sim/v1\npreset: h900x8\n")
	cases := []struct {
		name     string
		args     []string
		inStderr []string
	}{
		{"an unknown fault type in a scenario file", []string{"accept", "--sim", badType},
			[]string{"scenario " + badType + ": line 5: unknown fault type \"xidd\""}},
		{"an unknown preset in a scenario file", []string{"accept", "--sim", badPreset},
			[]string{"scenario " + badPreset + ": line 2: unknown preset \"h900x8\""}},
		{"a scenario file that does not exist", []string{"accept", "--sim", filepath.Join(dir, "missing.yaml")},
			[]string{"read sim scenario " + filepath.Join(dir, "missing.yaml"), "no such file"}},
		{"an unknown preset name", []string{"accept", "--sim", "h900x8"},
			[]string{`unknown sim preset "h900x8"`, "h100x8"}},
		{"an unknown preset name for inventory", []string{"inventory", "--sim", "h900x8"},
			[]string{`unknown sim preset "h900x8"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := execute(t, tc.args...)
			r.check(t, ExitUsage, nil, append(tc.inStderr, "Run 'gpunode --help' for usage."))
			if r.stdout != "" {
				t.Errorf("a bad scenario printed on stdout:\n%s", r.stdout)
			}
		})
	}
}

func TestBadUsageExitsTwo(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		inStderr string
	}{
		{"an unknown flag", []string{"accept", "--bogus"}, "unknown flag: --bogus"},
		{"an unknown shorthand flag", []string{"accept", "-z"}, "unknown shorthand flag: 'z'"},
		{"an unknown command", []string{"frobnicate"}, `unknown command "frobnicate" for "gpunode"`},
		{"an extra argument to accept", []string{"accept", "--sim", "h100x8", "extra"}, `"extra"`},
		{"an extra argument to inventory", []string{"inventory", "--sim", "h100x8", "extra"}, `"extra"`},
		{"an extra argument to version", []string{"version", "extra"}, `"extra"`},
		{"a flag value of the wrong type", []string{"accept", "--expect-gpus", "eight"}, `invalid argument "eight"`},
		{"a negative GPU count", []string{"accept", "--sim", "h100x8", "--expect-gpus", "-1"}, "--expect-gpus -1: must not be negative"},
		{"--sim-elapsed without --sim", []string{"accept", "--sim-elapsed", "1m"}, "--sim-elapsed needs --sim"},
		{"a negative --sim-elapsed", []string{"accept", "--sim", "h100x8", "--sim-elapsed", "-1m"}, "must not be negative"},
		{"an unknown layer", []string{"accept", "--sim", "h100x8", "--layers", "L9"}, `--layers: unknown layer "L9"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := execute(t, tc.args...)
			r.check(t, ExitUsage, nil, []string{"gpunode: ", tc.inStderr, "Run 'gpunode --help' for usage."})
		})
	}
}
