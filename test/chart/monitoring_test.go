package chart_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// monitoringGroup is the Prometheus Operator's API group (ServiceMonitor, PrometheusRule).
const monitoringGroup = "monitoring.coreos.com"

const monitoringValues = `
exporter:
  serviceMonitor:
    enabled: true
    interval: 15s
    additionalLabels: {release: kube-prometheus-stack}
prometheusRule:
  enabled: true
  additionalLabels: {release: kube-prometheus-stack}
grafanaDashboard:
  enabled: true
  namespace: monitoring
`

func TestTheChartsMonitoringFilesAreTheOnesDeployShips(t *testing.T) {
	for _, name := range []string{"rules.yaml", "grafana-dashboard.json"} {
		want, err := os.ReadFile(filepath.Join("..", "..", "deploy", "monitoring", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chartDir, "files", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("charts/gpunode/files/%s differs from deploy/monitoring/%s: copy it (cp deploy/monitoring/%s charts/gpunode/files/)", name, name, name)
		}
	}
}

func TestMonitoringIsOffByDefault(t *testing.T) {
	for _, m := range render(t, "") {
		if m.u.GroupVersionKind().Group == monitoringGroup || m.u.GetName() == "gpunode-dashboard" || m.u.GetName() == "gpunode-controller-metrics" {
			t.Errorf("the defaults render %s %s", m.u.GetKind(), m.u.GetName())
		}
	}
}

func TestEachServiceMonitorSelectsAServiceWithItsPort(t *testing.T) {
	ms := render(t, monitoringValues)
	monitors := objectsOf(ms, "ServiceMonitor")
	if len(monitors) != 2 {
		t.Fatalf("%d ServiceMonitors, want the agents' and the controller's", len(monitors))
	}
	for _, sm := range monitors {
		if sm.GetLabels()["release"] != "kube-prometheus-stack" {
			t.Errorf("ServiceMonitor %s lacks the additional labels: %v", sm.GetName(), sm.GetLabels())
		}
		sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(sel) == 0 || len(endpoints) != 1 {
			t.Fatalf("ServiceMonitor %s: selector %v, endpoints %v", sm.GetName(), sel, endpoints)
		}
		port := endpoints[0].(map[string]any)["port"]
		if endpoints[0].(map[string]any)["interval"] != "15s" {
			t.Errorf("ServiceMonitor %s: interval %v, want the value's 15s", sm.GetName(), endpoints[0].(map[string]any)["interval"])
		}
		var matched []string
		for _, m := range ms {
			svc, ok := m.typed.(*corev1.Service)
			if !ok || !labels.SelectorFromSet(sel).Matches(labels.Set(svc.Labels)) {
				continue
			}
			if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == port }) {
				t.Errorf("ServiceMonitor %s selects Service %s, which has no port %v", sm.GetName(), svc.Name, port)
			}
			matched = append(matched, svc.Name)
		}
		if len(matched) != 1 {
			t.Errorf("ServiceMonitor %s selects Services %v, want exactly one", sm.GetName(), matched)
		}
	}
}

func TestThePrometheusRuleCarriesTheRuleFilesGroups(t *testing.T) {
	rules := objectsOf(render(t, monitoringValues), "PrometheusRule")
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(rules))
	}
	got, _, _ := unstructured.NestedSlice(rules[0].Object, "spec", "groups")
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "monitoring", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []any `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Groups) == 0 || !reflect.DeepEqual(got, file.Groups) {
		t.Errorf("the PrometheusRule's groups differ from deploy/monitoring/rules.yaml (%d groups rendered, %d in the file)", len(got), len(file.Groups))
	}
}

func TestTheDashboardConfigMapIsTheDashboardForGrafanasSidecar(t *testing.T) {
	ms := render(t, monitoringValues)
	cm := find[*corev1.ConfigMap](ms, "ConfigMap", "gpunode-dashboard")
	if cm == nil {
		t.Fatalf("no ConfigMap gpunode-dashboard among %v", kinds(ms))
	}
	if cm.Namespace != "monitoring" || cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("ConfigMap in %q with labels %v: want namespace monitoring and the sidecar's label grafana_dashboard=1", cm.Namespace, cm.Labels)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "monitoring", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(cm.Data["gpunode.json"]), &got); err != nil {
		t.Fatalf("the ConfigMap's gpunode.json is not JSON: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("the ConfigMap's dashboard differs from deploy/monitoring/grafana-dashboard.json")
	}
}

func objectsOf(ms []manifest, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, m := range ms {
		if m.u.GetKind() == kind && m.u.GroupVersionKind().Group == monitoringGroup {
			out = append(out, m.u)
		}
	}
	return out
}
