package chart_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The images of the agent and the controller, their pull policies and pull secrets, as the
// real helm renders them.
func TestImagesFollowTheRegistryThenTheComponentThenTheChartWideValues(t *testing.T) {
	const app = "0.1.0" // the chart's appVersion
	cases := []struct {
		name                string
		args                []string
		agent, controller   string
		agentPull, ctrlPull corev1.PullPolicy
		pullSecrets         []string
	}{
		{"the defaults run ghcr.io's image at the chart's appVersion", nil,
			"ghcr.io/gpunode/gpunode:" + app, "ghcr.io/gpunode/gpunode:" + app, corev1.PullIfNotPresent, corev1.PullIfNotPresent, nil},
		{"a registry replaces ghcr.io in every image",
			[]string{"--set", "image.registry=registry.example.com:5000"},
			"registry.example.com:5000/gpunode/gpunode:" + app, "registry.example.com:5000/gpunode/gpunode:" + app, corev1.PullIfNotPresent, corev1.PullIfNotPresent, nil},
		{"a registry with a path puts the repository's path under it",
			[]string{"--set", "image.registry=harbor.example.com/mirror/"},
			"harbor.example.com/mirror/gpunode/gpunode:" + app, "harbor.example.com/mirror/gpunode/gpunode:" + app, corev1.PullIfNotPresent, corev1.PullIfNotPresent, nil},
		{"a registry goes in front of a repository that names none",
			[]string{"--set", "image.registry=localhost:5000", "--set", "image.repository=gpunode/gpunode"},
			"localhost:5000/gpunode/gpunode:" + app, "localhost:5000/gpunode/gpunode:" + app, corev1.PullIfNotPresent, corev1.PullIfNotPresent, nil},
		{"the chart-wide repository and tag set both components",
			[]string{"--set", "image.repository=registry.example.com/gpunode/gpunode", "--set", "image.tag=v0.2.0", "--set", "image.pullPolicy=Always"},
			"registry.example.com/gpunode/gpunode:v0.2.0", "registry.example.com/gpunode/gpunode:v0.2.0", corev1.PullAlways, corev1.PullAlways, nil},
		{"a component's own repository, tag and pull policy win over the chart-wide ones",
			[]string{"--set", "image.tag=v0.2.0", "--set", "agent.image.repository=registry.example.com/ops/gpunode-nsenter",
				"--set", "agent.image.tag=v0.2.0-debian", "--set", "controller.image.pullPolicy=Always"},
			"registry.example.com/ops/gpunode-nsenter:v0.2.0-debian", "ghcr.io/gpunode/gpunode:v0.2.0", corev1.PullIfNotPresent, corev1.PullAlways, nil},
		{"the registry applies to a component's own repository too",
			[]string{"--set", "image.registry=mirror.internal", "--set", "controller.image.repository=quay.io/acme/gpunode", "--set", "controller.image.tag=v9"},
			"mirror.internal/gpunode/gpunode:" + app, "mirror.internal/acme/gpunode:v9", corev1.PullIfNotPresent, corev1.PullIfNotPresent, nil},
		{"pull secrets given by name or as objects reach every pod",
			[]string{"--set", "imagePullSecrets[0]=regcred", "--set", "imagePullSecrets[1].name=mirror-pull"},
			"ghcr.io/gpunode/gpunode:" + app, "ghcr.io/gpunode/gpunode:" + app, corev1.PullIfNotPresent, corev1.PullIfNotPresent, []string{"regcred", "mirror-pull"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ms := helmTemplate(t, tc.args...)
			agent := &agentDaemonSet(t, ms).Spec.Template.Spec
			ctrl := &controllerDeployment(t, ms).Spec.Template.Spec
			for _, p := range []struct {
				name  string
				pod   *corev1.PodSpec
				image string
				pull  corev1.PullPolicy
			}{{"agent", agent, tc.agent, tc.agentPull}, {"controller", ctrl, tc.controller, tc.ctrlPull}} {
				c := p.pod.Containers[0]
				if c.Image != p.image || c.ImagePullPolicy != p.pull {
					t.Errorf("the %s runs %s (pull %s); want %s (pull %s)", p.name, c.Image, c.ImagePullPolicy, p.image, p.pull)
				}
				var secrets []string
				for _, s := range p.pod.ImagePullSecrets {
					secrets = append(secrets, s.Name)
				}
				if !slices.Equal(secrets, tc.pullSecrets) {
					t.Errorf("the %s's imagePullSecrets are %v; want %v", p.name, secrets, tc.pullSecrets)
				}
			}
		})
	}
}

// A bad image value is refused at helm install, naming the value and what it must be.
func TestTheSchemaRefusesABadImageValueNamingIt(t *testing.T) {
	cases := []struct{ name, set, path string }{
		{"a registry with a scheme is refused", "image.registry=https://registry.example.com", "/image/registry"},
		{"an upper-case repository is refused", "image.repository=ghcr.io/GPUnode/gpunode", "/image/repository"},
		{"a repository with its tag is refused", "agent.image.repository=ghcr.io/gpunode/gpunode:v1", "/agent/image/repository"},
		{"a tag with a space is refused", "controller.image.tag=v1 beta", "/controller/image/tag"},
		{"an unknown pull policy is refused", "agent.image.pullPolicy=Sometimes", "/agent/image/pullPolicy"},
		{"a pull secret whose name is not a Secret's is refused", "imagePullSecrets[0]=Reg_Cred", "/imagePullSecrets/0"},
		{"an unknown key of a component's image is refused", "agent.image.registry=mirror.internal", "/agent/image"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := helmTemplateFails(t, "--set", tc.set)
			if !strings.Contains(out, "values don't meet the specifications of the schema") || !strings.Contains(out, fmt.Sprintf("'%s'", tc.path)) {
				t.Errorf("helm's refusal of %s should name %s:\n%s", tc.set, tc.path, out)
			}
		})
	}
}
