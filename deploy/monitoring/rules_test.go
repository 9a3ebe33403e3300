package monitoring

import (
	"bytes"
	"flag"
	"log/slog"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"go.yaml.in/yaml/v3"
)

const (
	rulesFile          = "rules.yaml"
	prometheusRuleFile = "prometheusrule.yaml"
	runbookPrefix      = "https://github.com/gpunode/gpunode/blob/main/docs/runbooks.md#"
)

var update = flag.Bool("update", false, "rewrite prometheusrule.yaml from rules.yaml")

// prometheusRuleHeader is what prometheusrule.yaml carries before rules.yaml's groups.
const prometheusRuleHeader = `# gpunode alerting rules for the Prometheus Operator (kube-prometheus-stack).
# Generated from rules.yaml, which carries the same groups for plain Prometheus: edit that file,
# then run: go test ./deploy/monitoring/ -run PrometheusRule -update
# The release label matches kube-prometheus-stack's default ruleSelector for a release named
# kube-prometheus-stack; change it to your release's name (docs/monitoring.md).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: gpunode
  labels:
    app.kubernetes.io/name: gpunode
    app.kubernetes.io/component: monitoring
    release: kube-prometheus-stack
spec:
`

// loadRules parses rules.yaml as Prometheus does (rulefmt validates every expression with
// the PromQL parser and every annotation as a template).
func loadRules(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, promqlParser, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("%s: %v", rulesFile, err)
	}
	if groups == nil || len(errs) > 0 {
		t.FailNow()
	}
	return groups
}

// alerts returns every alerting rule of the file.
func alerts(t *testing.T) []rulefmt.Rule {
	t.Helper()
	var out []rulefmt.Rule
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: recording rule %q: this file holds alerts only", g.Name, r.Record)
				continue
			}
			out = append(out, r)
		}
	}
	return out
}

var severities = map[string]bool{"critical": true, "warning": true, "info": true}

func TestEveryAlertHasSeveritySummaryDescriptionAndRunbook(t *testing.T) {
	anchors := runbookAnchors(t)
	seen := map[string]bool{}
	for _, r := range alerts(t) {
		if seen[r.Alert] {
			t.Errorf("alert %s: defined twice", r.Alert)
		}
		seen[r.Alert] = true
		if !severities[r.Labels["severity"]] {
			t.Errorf("alert %s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
		}
		for _, a := range []string{"summary", "description"} {
			if text := r.Annotations[a]; !strings.Contains(text, "$labels.") {
				t.Errorf("alert %s: %s %q does not name the GPU or node ($labels)", r.Alert, a, text)
			}
		}
		url := r.Annotations["runbook_url"]
		anchor, ok := strings.CutPrefix(url, runbookPrefix)
		if !ok {
			t.Errorf("alert %s: runbook_url %q does not start with %s", r.Alert, url, runbookPrefix)
			continue
		}
		if anchor != strings.ToLower(r.Alert) {
			t.Errorf("alert %s: runbook anchor %q, want the alert's own section %q", r.Alert, anchor, strings.ToLower(r.Alert))
		}
		if !anchors[anchor] {
			t.Errorf("alert %s: %s has no heading with anchor #%s", r.Alert, runbooksDoc, anchor)
		}
	}
	if len(seen) < 10 {
		t.Errorf("found %d alerts, want the four telemetry alerts and the health ones", len(seen))
	}
}

// metricInText finds metric names in template text (the queries an annotation runs).
var metricInText = regexp.MustCompile(`\b(?:DCGM_FI_[A-Z0-9_]+|gpunode_[a-z0-9_]+)\b`)

func TestAlertsQueryOnlyMetricsTheExportersServe(t *testing.T) {
	known := knownMetrics(t)
	for _, r := range alerts(t) {
		unknown, err := unknownMetrics(r.Expr, known)
		if err != nil {
			t.Errorf("alert %s: %v", r.Alert, err)
		}
		for _, text := range r.Annotations {
			for _, n := range metricInText.FindAllString(text, -1) {
				if !known[n] {
					unknown = append(unknown, n)
				}
			}
		}
		if len(unknown) > 0 {
			t.Errorf("alert %s queries %v: not in %s (nor %v)", r.Alert, unknown, metricsDoc, externalMetrics)
		}
	}
}

// spec returns the PrometheusRule's spec, decoded.
func prometheusRuleSpec(t *testing.T, b []byte) any {
	t.Helper()
	var obj struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Spec any `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &obj); err != nil {
		t.Fatalf("%s: %v", prometheusRuleFile, err)
	}
	if obj.APIVersion != "monitoring.coreos.com/v1" || obj.Kind != "PrometheusRule" || obj.Metadata.Name == "" {
		t.Errorf("%s: %s %s named %q, want a monitoring.coreos.com/v1 PrometheusRule with a name",
			prometheusRuleFile, obj.APIVersion, obj.Kind, obj.Metadata.Name)
	}
	return obj.Spec
}

// groupsOf returns rules.yaml's text from its first line that is not a comment: the part
// that becomes the PrometheusRule's spec.
func groupsOf(rules []byte) []byte {
	for i := 0; i < len(rules); {
		end := bytes.IndexByte(rules[i:], '\n')
		if end < 0 {
			end = len(rules) - i
		}
		if line := rules[i : i+end]; len(bytes.TrimSpace(line)) > 0 && line[0] != '#' {
			return rules[i:]
		}
		i += end + 1
	}
	return nil
}

func TestPrometheusRuleSpecEqualsTheRulesFile(t *testing.T) {
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		var b strings.Builder
		b.WriteString(prometheusRuleHeader)
		for line := range strings.SplitSeq(strings.TrimSuffix(string(groupsOf(rules)), "\n"), "\n") {
			if line != "" {
				b.WriteString("  " + line)
			}
			b.WriteString("\n")
		}
		if err := os.WriteFile(prometheusRuleFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cr, err := os.ReadFile(prometheusRuleFile)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	var plain any
	if err := yaml.Unmarshal(rules, &plain); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if spec := prometheusRuleSpec(t, cr); !reflect.DeepEqual(spec, plain) {
		t.Errorf("%s's spec differs from %s: edit %s, then run go test ./deploy/monitoring/ -run PrometheusRule -update",
			prometheusRuleFile, rulesFile, rulesFile)
	}
}

func TestGroupsOfSkipsTheLeadingComments(t *testing.T) {
	in := []byte("# a\n\n# b\ngroups:\n  # c\n  - name: x\n")
	if got, want := string(groupsOf(in)), "groups:\n  # c\n  - name: x\n"; got != want {
		t.Errorf("groupsOf = %q, want %q", got, want)
	}
	if got := groupsOf([]byte("# only a comment\n")); got != nil {
		t.Errorf("groupsOf(only comments) = %q, want nil", got)
	}
}
