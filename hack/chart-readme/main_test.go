package main

import (
	"os"
	"strings"
	"testing"
)

const chartDir = "../../charts/gpunode"

func TestTheChartsReadmeIsWhatItsValuesSay(t *testing.T) {
	want, err := os.ReadFile(chartDir + "/README.md")
	if err != nil {
		t.Fatal(err)
	}
	got, err := readme(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("charts/gpunode/README.md is not what values.yaml says: run go generate ./hack/chart-readme/")
	}
}

// Every value the schema lists under an object the README describes key by key has its
// entry, with its default, and a comment that shows an example keeps it as a code block.
func TestTheReadmeHasAnEntryForEveryValueWithItsDefault(t *testing.T) {
	got, err := readme(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"- **`image.registry`** (default `\"\"`)",
		"- **`mig.strategy`** (default `\"\"`)",
		"- **`agent.interval`** (default `30s`)",
		"- **`agent.gpuNodeLabels`** (default `[{\"key\":\"nvidia.com/gpu.present\",\"value\":\"true\"}",
		"- **`exporter.webConfig`** (default `{}`)",
		"- **`controller.image.tag`** (default `\"\"`)",
		"  ```yaml\n  rebootCommand: [nsenter,",
		"### `admissionPolicy`",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the README lacks %q", want)
		}
	}
}

func TestACommentBecomesParagraphsAndCodeBlocks(t *testing.T) {
	cases := []struct{ name, comment, want string }{
		{"prose lines join into one paragraph", "# one\n# two", "one two"},
		{"a blank comment line starts a new paragraph", "# one\n#\n# two", "one\n\ntwo"},
		{"lines indented past the comment are a YAML block", "# for example:\n#   a: 1\n#   b: [2]\n# after", "for example:\n\n```yaml\na: 1\nb: [2]\n```\n\nafter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := comment(tc.comment, false); got != tc.want {
				t.Errorf("comment(%q) = %q, want %q", tc.comment, got, tc.want)
			}
		})
	}
}
