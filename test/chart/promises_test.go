package chart_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// promise checks what a documented value promises in the rendered objects; rest is the part
// of the value's path under the promise's (a label's name), value its value.
type promise func(r rendered, rest, value string) error

// rendered is one render of the chart, with its agent and controller (nil when absent).
type rendered struct {
	ms         []manifest
	agent      *appsv1.DaemonSet
	controller *appsv1.Deployment
}

// promises are what each value the pages document renders, by the value's path (the longest
// path that starts a documented value's is its promise). A value a page shows without a
// promise here fails the test: add what it promises.
var promises = map[string]promise{
	"image.repository": func(r rendered, _, v string) error {
		return r.images(func(i string) bool { return strings.HasPrefix(i, v+":") })
	},
	"image.tag": func(r rendered, _, v string) error {
		return r.images(func(i string) bool { return strings.HasSuffix(i, ":"+v) })
	},
	"image.registry": func(r rendered, _, v string) error {
		return r.images(func(i string) bool { return strings.HasPrefix(i, v+"/") })
	},
	"mig.strategy": agentArg("--mig-strategy=%s"),
	"logFormat": func(r rendered, _, v string) error {
		return errors.Join(agentArg("--log-format=%s")(r, "", v), controllerArg("--log-format="+v)(r))
	},
	"agent.sim":                   agentArg("--sim=%s"),
	"agent.simScenario":           all(agentArg("--sim=/etc/gpunode/sim/scenario.yaml"), object("ConfigMap", "gpunode-agent-sim")),
	"agent.simHost":               boolArg(agentArgFn("--host-root=/host"), "real"),
	"agent.devicePlugin.enabled":  boolArg(agentArgFn("--device-plugin"), "true"),
	"agent.devicePlugin.strategy": agentArg("--device-plugin-strategy=%s"),
	"agent.remediation.hostPID": func(r rendered, _, v string) error {
		return want(r.agentPod().HostPID == (v == "true"), "hostPID %v", v)
	},
	"agent.remediation.rebootCommand":     listArg("--reboot-command="),
	"agent.remediation.powerCycleCommand": listArg("--power-cycle-command="),
	"agent.privileged": func(r rendered, _, v string) error {
		sc := r.agentPod().Containers[0].SecurityContext
		return want(sc != nil && sc.Privileged != nil && *sc.Privileged == (v == "true"), "an agent with privileged %s", v)
	},
	"agent.enabled": func(r rendered, _, v string) error {
		return want((r.agent != nil) == (v == "true"), "agent DaemonSet present: %s", v)
	},
	"controller.enabled": func(r rendered, _, v string) error {
		return want((r.controller != nil) == (v == "true"), "controller present: %s", v)
	},
	"controller.extraArgs": func(r rendered, _, v string) error {
		var args []string
		if err := json.Unmarshal([]byte(v), &args); err != nil {
			return err
		}
		return want(r.controller != nil && containsAll(r.controller.Spec.Template.Spec.Containers[0].Args, args), "controller args %v", args)
	},
	"controller.extraEnv": func(r rendered, _, v string) error {
		var env []corev1.EnvVar
		if err := json.Unmarshal([]byte(v), &env); err != nil {
			return err
		}
		return want(r.controller != nil && containsAll(r.controller.Spec.Template.Spec.Containers[0].Env, env), "controller env %v", env)
	},
	"driver.managed": boolArg(func(r rendered) bool {
		return envValue(&r.agentPod().Containers[0], "GPUNODE_DRIVER_ROOT") == "/host/run/nvidia/driver"
	}, "true"),
	"devicePlugin.enabled": boolArg(func(r rendered) bool { return hasMount(&r.agentPod().Containers[0], "device-plugins") }, "true"),
	"exporter.enabled": boolArg(func(r rendered) bool {
		return slices.Contains(r.agentPod().Containers[0].Args, "--metrics-bind-address=:9400") && r.find("Service", "gpunode-exporter") != nil
	}, "true"),
	"exporter.webConfig": func(r rendered, rest, v string) error {
		sec := r.find("Secret", "gpunode-exporter-web-config")
		if sec == nil {
			return fmt.Errorf("want the Secret gpunode-exporter-web-config")
		}
		text, _, _ := unstructured.NestedString(sec.Object, "stringData", "web-config.yml")
		return errors.Join(agentArg("--web.config.file=/etc/gpunode/web/web-config.yml")(r, "", v),
			want(strings.Contains(text, strings.Split(rest, ".")[0]+":"), "the web config Secret holding %s", rest))
	},
	"exporter.tlsSecretName": func(r rendered, _, v string) error {
		return want(slices.ContainsFunc(r.agentPod().Volumes, func(vol corev1.Volume) bool {
			return vol.Secret != nil && vol.Secret.SecretName == v
		}) && hasMount(&r.agentPod().Containers[0], "exporter-tls"), "the Secret %s mounted in the agent", v)
	},
	"exporter.serviceMonitor.tlsConfig": func(r rendered, _, _ string) error {
		ep := r.exporterEndpoint()
		_, tls := ep["tlsConfig"]
		return want(ep["scheme"] == "https" && tls, "an https endpoint with a tlsConfig: %v", ep)
	},
	"exporter.serviceMonitor.basicAuth": func(r rendered, _, _ string) error {
		_, auth := r.exporterEndpoint()["basicAuth"]
		return want(auth, "an endpoint with basicAuth: %v", r.exporterEndpoint())
	},
	"imagePullSecrets": func(r rendered, _, v string) error {
		names := []string{v}
		if strings.HasPrefix(v, "[") {
			if err := json.Unmarshal([]byte(v), &names); err != nil {
				return err
			}
		}
		var have []string
		for _, s := range r.agentPod().ImagePullSecrets {
			have = append(have, s.Name)
		}
		return want(containsAll(have, names), "pull secrets %v, have %v", names, have)
	},
	"agent.image.repository": func(r rendered, _, v string) error {
		_, path, _ := strings.Cut(v, "/")
		img := r.agentPod().Containers[0].Image
		return want(strings.Contains(img, "/"+path+":"), "the agent's image from %s, not %s", v, img)
	},
	"agent.image.tag": func(r rendered, _, v string) error {
		return want(strings.HasSuffix(r.agentPod().Containers[0].Image, ":"+v), "the agent's image at %s", v)
	},
	"exporter.serviceMonitor.enabled":          boolArg(func(r rendered) bool { return r.find("ServiceMonitor", "gpunode-exporter") != nil }, "true"),
	"exporter.serviceMonitor.additionalLabels": label("ServiceMonitor", "gpunode-exporter"),
	"prometheusRule.enabled":                   boolArg(func(r rendered) bool { return r.find("PrometheusRule", "gpunode") != nil }, "true"),
	"prometheusRule.additionalLabels":          label("PrometheusRule", "gpunode"),
	"grafanaDashboard.enabled":                 boolArg(func(r rendered) bool { return r.find("ConfigMap", "gpunode-dashboard") != nil }, "true"),
	"grafanaDashboard.namespace": func(r rendered, _, v string) error {
		cm := r.find("ConfigMap", "gpunode-dashboard")
		return want(cm != nil && cm.GetNamespace() == v, "the dashboard ConfigMap in namespace %s", v)
	},
	"defaultPolicy.enabled": boolArg(func(r rendered) bool { return r.find("GPUNodePolicy", "default") != nil }, "true"),
	"defaultPolicy.spec": func(r rendered, rest, _ string) error {
		p := r.find("GPUNodePolicy", "default")
		if p == nil {
			return nil // the spec of a policy the example does not enable
		}
		_, found, _ := unstructured.NestedFieldNoCopy(p.Object, append([]string{"spec"}, strings.Split(rest, ".")[0])...)
		return want(found, "the policy's spec.%s", rest)
	},
}

// Every values combination the pages show renders with the real helm, and does what it
// promises.
func TestEveryDocumentedValuesCombinationRendersWhatItPromises(t *testing.T) {
	topKeys := valuesKeys(t)
	total := 0
	for _, page := range documentedPages {
		for _, d := range documentedCombinations(t, page, topKeys) {
			total++
			t.Run(d.where, func(t *testing.T) {
				args := d.args
				if d.yaml != "" {
					args = append(args, "-f", valuesFile(t, d.yaml))
				}
				ms := helmTemplate(t, args...)
				r := rendered{ms: ms, agent: find[*appsv1.DaemonSet](ms, "DaemonSet", "gpunode-agent"),
					controller: find[*appsv1.Deployment](ms, "Deployment", "gpunode-controller")}
				for _, s := range d.settings {
					key, ok := promiseOf(s.path)
					if !ok {
						t.Errorf("%s=%s: the test has no promise for this documented value (add one to promises)", s.path, s.value)
						continue
					}
					if err := promises[key](r, strings.TrimPrefix(strings.TrimPrefix(s.path, key), "."), s.value); err != nil {
						t.Errorf("%s=%s: %v", s.path, s.value, err)
					}
				}
			})
		}
	}
	// The pages show at least the install, the simulated install and its upgrades, the
	// install modes, the monitoring upgrade and the values examples.
	if total < 20 {
		t.Errorf("only %d documented combinations found: is the extraction still reading the pages?", total)
	}
}

func promiseOf(path string) (string, bool) {
	keys := make([]string, 0, len(promises))
	for k := range promises {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		if path == k || strings.HasPrefix(path, k+".") || strings.HasPrefix(path, k+"[") {
			return k, true
		}
	}
	return "", false
}

func valuesKeys(t *testing.T) []string {
	t.Helper()
	text, err := os.ReadFile(chartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(text, &v); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range v {
		keys = append(keys, k)
	}
	return keys
}

func (r rendered) agentPod() *corev1.PodSpec {
	if r.agent == nil {
		return &corev1.PodSpec{Containers: []corev1.Container{{}}}
	}
	return &r.agent.Spec.Template.Spec
}

func (r rendered) find(kind, name string) *unstructured.Unstructured {
	return findObject(r.ms, kind, name)
}

func (r rendered) exporterEndpoint() map[string]any { return exporterEndpoint(r.ms) }

func (r rendered) images(ok func(string) bool) error {
	var bad []string
	if r.agent != nil && !ok(r.agent.Spec.Template.Spec.Containers[0].Image) {
		bad = append(bad, "agent "+r.agent.Spec.Template.Spec.Containers[0].Image)
	}
	if r.controller != nil && !ok(r.controller.Spec.Template.Spec.Containers[0].Image) {
		bad = append(bad, "controller "+r.controller.Spec.Template.Spec.Containers[0].Image)
	}
	return want(len(bad) == 0, "images, not %v", bad)
}

func agentArgFn(arg string) func(rendered) bool {
	return func(r rendered) bool { return slices.Contains(r.agentPod().Containers[0].Args, arg) }
}

// agentArg promises the agent's argument format (with the value for %s).
func agentArg(format string) promise {
	return func(r rendered, _, v string) error {
		arg := format
		if strings.Contains(format, "%s") {
			arg = fmt.Sprintf(format, v)
		}
		return want(agentArgFn(arg)(r), "the agent's argument %s among %v", arg, r.agentPod().Containers[0].Args)
	}
}

func controllerArg(arg string) func(rendered) error {
	return func(r rendered) error {
		return want(r.controller != nil && slices.Contains(r.controller.Spec.Template.Spec.Containers[0].Args, arg), "the controller's argument %s", arg)
	}
}

// boolArg promises that has holds exactly when the value is on.
func boolArg(has func(rendered) bool, on string) promise {
	return func(r rendered, _, v string) error { return want(has(r) == (v == on), "the render for %s", v) }
}

func listArg(flag string) promise {
	return func(r rendered, _, v string) error {
		var cmd []string
		if err := json.Unmarshal([]byte(v), &cmd); err != nil {
			return err
		}
		return agentArg(flag+strings.Join(cmd, ","))(r, "", "")
	}
}

func object(kind, name string) promise {
	return func(r rendered, _, _ string) error { return want(r.find(kind, name) != nil, "%s/%s", kind, name) }
}

func label(kind, name string) promise {
	return func(r rendered, rest, v string) error {
		o := r.find(kind, name)
		return want(o != nil && o.GetLabels()[rest] == v, "%s/%s labelled %s=%s", kind, name, rest, v)
	}
}

func all(ps ...promise) promise {
	return func(r rendered, rest, v string) error {
		var errs []error
		for _, p := range ps {
			errs = append(errs, p(r, rest, v))
		}
		return errors.Join(errs...)
	}
}

func want(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf("want "+format, args...)
}

func containsAll[T comparable](have, want []T) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
