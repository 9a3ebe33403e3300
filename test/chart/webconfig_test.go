package chart_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/exporter-toolkit/web"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// exampleHash is a bcrypt hash of the password "example" (the chart's README shows it).
const exampleHash = "$2a$10$m3Z4XBCDVgO0WjXPSFInJOUPMhw5inpgrEx7OG6aIJQ0jTpnt/QUe"

// webValues are values for TLS and basic auth of the metrics endpoint, scraped by the
// chart's ServiceMonitor.
const webValues = `
exporter:
  tlsSecretName: gpunode-exporter-tls
  webConfig:
    tls_server_config:
      cert_file: /etc/gpunode/web-tls/tls.crt
      key_file: /etc/gpunode/web-tls/tls.key
    basic_auth_users:
      prometheus: "` + exampleHash + `"
  serviceMonitor:
    enabled: true
    tlsConfig: {serverName: gpunode-exporter, ca: {secret: {name: gpunode-exporter-tls, key: ca.crt}}}
    basicAuth:
      username: {name: scrape, key: username}
      password: {name: scrape, key: password}
`

func TestTheExportersWebConfigReachesTheAgentAndTheServiceMonitorScrapesHTTPS(t *testing.T) {
	ms := helmTemplate(t, "-f", valuesFile(t, webValues))
	pod := agentDaemonSet(t, ms).Spec.Template.Spec
	c := pod.Containers[0]
	if !slices.Contains(c.Args, "--web.config.file=/etc/gpunode/web/web-config.yml") {
		t.Errorf("the agent's args %v lack --web.config.file", c.Args)
	}
	for _, m := range []struct{ volume, secret, path string }{
		{"exporter-web-config", "gpunode-exporter-web-config", "/etc/gpunode/web"},
		{"exporter-tls", "gpunode-exporter-tls", "/etc/gpunode/web-tls"},
	} {
		if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
			return v.Name == m.volume && v.Secret != nil && v.Secret.SecretName == m.secret
		}) ||
			!slices.ContainsFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.Name == m.volume && vm.MountPath == m.path && vm.ReadOnly }) {
			t.Errorf("the Secret %s should be mounted read-only at %s: volumes %+v, mounts %+v", m.secret, m.path, pod.Volumes, c.VolumeMounts)
		}
	}
	sec := find[*corev1.Secret](ms, "Secret", "gpunode-exporter-web-config")
	if sec == nil {
		t.Fatalf("no Secret gpunode-exporter-web-config among %v", kinds(ms))
	}
	if text := sec.StringData["web-config.yml"]; !strings.Contains(text, "cert_file: /etc/gpunode/web-tls/tls.crt") || !strings.Contains(text, exampleHash) {
		t.Errorf("the web config Secret holds:\n%s", text)
	}
	ep := exporterEndpoint(ms)
	if ep["scheme"] != "https" || ep["tlsConfig"] == nil || ep["basicAuth"] == nil || ep["port"] != "metrics" {
		t.Errorf("the agents' ServiceMonitor endpoint should scrape https with its tlsConfig and basicAuth: %v", ep)
	}
	if ctrl := findObject(ms, "ServiceMonitor", "gpunode-controller"); ctrl == nil {
		t.Error("no ServiceMonitor gpunode-controller")
	} else if eps, _, _ := unstructured.NestedSlice(ctrl.Object, "spec", "endpoints"); len(eps) != 1 || eps[0].(map[string]any)["scheme"] != nil {
		t.Errorf("the controller's endpoint should stay plain http (its metrics are not the exporter's): %v", eps)
	}
}

// The agent parses the rendered configuration with exporter-toolkit, as the chart renders it.
func TestTheRenderedWebConfigIsOneTheAgentAccepts(t *testing.T) {
	ms := helmTemplate(t, "--set-string", "exporter.webConfig.basic_auth_users.prometheus="+exampleHash)
	sec := find[*corev1.Secret](ms, "Secret", "gpunode-exporter-web-config")
	if sec == nil {
		t.Fatalf("no Secret gpunode-exporter-web-config among %v", kinds(ms))
	}
	path := filepath.Join(t.TempDir(), "web-config.yml")
	if err := os.WriteFile(path, []byte(sec.StringData["web-config.yml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := web.Validate(path); err != nil {
		t.Errorf("exporter-toolkit refuses the rendered web config: %v\n%s", err, sec.StringData["web-config.yml"])
	}
	if ep := exporterEndpoint(ms); ep != nil {
		t.Errorf("no ServiceMonitor was asked for, yet one renders: %v", ep)
	}
}

func TestTheDefaultsServeTheMetricsOverPlainHTTP(t *testing.T) {
	ms := helmTemplate(t, "--set", "exporter.serviceMonitor.enabled=true")
	c := container(agentDaemonSet(t, ms), "agent")
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--web.config.file") }) || hasMount(c, "exporter-web-config") {
		t.Errorf("the defaults give the agent a web config: args %v", c.Args)
	}
	if ep := exporterEndpoint(ms); ep == nil || ep["scheme"] != nil || ep["basicAuth"] != nil {
		t.Errorf("the default ServiceMonitor endpoint should be plain http: %v", ep)
	}
}

func TestAWebConfigTheAgentOrPrometheusCannotUseIsRefusedNamingIt(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"a password that is not a bcrypt hash is refused by the schema",
			[]string{"--set", "exporter.webConfig.basic_auth_users.prometheus=secret"}, []string{"'/exporter/webConfig/basic_auth_users/prometheus'"}},
		{"TLS without a key is refused by the schema",
			[]string{"--set", "exporter.webConfig.tls_server_config.cert_file=/etc/gpunode/web-tls/tls.crt"}, []string{"'/exporter/webConfig/tls_server_config'"}},
		{"an unknown key of the web config is refused by the schema",
			[]string{"--set", "exporter.webConfig.tls_config.cert_file=x"}, []string{"'/exporter/webConfig'", "tls_config"}},
		{"basic auth that the ServiceMonitor cannot send is refused",
			[]string{"--set-string", "exporter.webConfig.basic_auth_users.prometheus=" + exampleHash, "--set", "exporter.serviceMonitor.enabled=true"},
			[]string{"exporter.webConfig.basic_auth_users needs exporter.serviceMonitor.basicAuth"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := helmTemplateFails(t, tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("helm's refusal does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

// findObject is the rendered object of kind and name as the API server gets it, or nil.
func findObject(ms []manifest, kind, name string) *unstructured.Unstructured {
	for _, m := range ms {
		if m.u.GetKind() == kind && m.u.GetName() == name {
			return m.u
		}
	}
	return nil
}

// exporterEndpoint is the first endpoint of the agents' ServiceMonitor, or nil.
func exporterEndpoint(ms []manifest) map[string]any {
	sm := findObject(ms, "ServiceMonitor", "gpunode-exporter")
	if sm == nil {
		return nil
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) == 0 {
		return nil
	}
	ep, _ := eps[0].(map[string]any)
	return ep
}
