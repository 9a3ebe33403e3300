package chart_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

const extrasValues = `
agent:
  extraArgs: [--label-mapping=/etc/gpunode/labels.yaml]
  extraEnv: [{name: GOMAXPROCS, value: "2"}, {name: GOMEMLIMIT, valueFrom: {resourceFieldRef: {containerName: agent, resource: limits.memory}}}]
controller:
  extraArgs: [--remediation=false]
  extraEnv: [{name: GOMAXPROCS, value: "1"}]
`

// The default policy of the install mode below, and what the API server must accept of it.
const defaultPolicySpec = `
priority: 10
classes: [{class: h100-sxm-80gb, gpus: 8, model: NVIDIA H100 80GB HBM3}]
versions: {driver: [">=580.95"]}
acceptance: {layers: [host, hardware]}
`

// extraModes are the optional values: extra arguments and environment, a default policy.
var extraModes = []installMode{
	{"extra arguments and environment reach each container after the chart's own", extrasValues,
		func(t *testing.T, ms []manifest) {
			ds := agentDaemonSet(t, ms)
			d := controllerDeployment(t, ms)
			for _, tt := range []struct {
				c       *corev1.Container
				lastArg string
				env     string
			}{
				{container(ds, "agent"), "--label-mapping=/etc/gpunode/labels.yaml", "GOMEMLIMIT"},
				{&d.Spec.Template.Spec.Containers[0], "--remediation=false", "GOMAXPROCS"},
			} {
				if got := tt.c.Args[len(tt.c.Args)-1]; got != tt.lastArg {
					t.Errorf("container %s: last argument %q, want %q (args %v)", tt.c.Name, got, tt.lastArg, tt.c.Args)
				}
				if !hasEnv(tt.c, tt.env) {
					t.Errorf("container %s: env %+v lacks %s", tt.c.Name, tt.c.Env, tt.env)
				}
				if tt.c.Name != "controller" && !hasEnv(tt.c, "NODE_NAME") {
					t.Errorf("container %s: the extra environment replaced the chart's own: %+v", tt.c.Name, tt.c.Env)
				}
			}
			if ref := container(ds, "agent").Env[len(container(ds, "agent").Env)-1].ValueFrom; ref == nil || ref.ResourceFieldRef == nil {
				t.Errorf("the agent's extra environment lost its valueFrom: %+v", container(ds, "agent").Env)
			}
		}},
	{"a default policy from values is rendered as given", "defaultPolicy:\n  enabled: true\n  spec:" + indent(defaultPolicySpec, "    "),
		func(t *testing.T, ms []manifest) {
			p := find[*v1alpha1.GPUNodePolicy](ms, "GPUNodePolicy", "default")
			if p == nil {
				t.Fatalf("no GPUNodePolicy default among %v", kinds(ms))
			}
			var want v1alpha1.GPUNodePolicySpec
			if err := yaml.UnmarshalStrict([]byte(defaultPolicySpec), &want); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(p.Spec, want) {
				t.Errorf("spec = %+v, want %+v", p.Spec, want)
			}
		}},
}

func TestTheDefaultPolicyIsOffByDefaultAndGovernsEveryGPUNodeWhenOn(t *testing.T) {
	tests := []struct {
		name, values, policy string
	}{
		{"no policy is rendered by default", "", ""},
		{"an empty spec is a policy of the defaults that selects every GPU node", "defaultPolicy: {enabled: true}", "default"},
		{"the policy takes the name given", "defaultPolicy: {enabled: true, name: fleet}", "fleet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var policies []*v1alpha1.GPUNodePolicy
			for _, m := range render(t, tt.values) {
				if p, ok := m.typed.(*v1alpha1.GPUNodePolicy); ok {
					policies = append(policies, p)
				}
			}
			switch {
			case tt.policy == "" && len(policies) != 0:
				t.Fatalf("rendered %d policies, want none", len(policies))
			case tt.policy == "":
			case len(policies) != 1 || policies[0].Name != tt.policy:
				t.Fatalf("rendered %v, want the one policy %s", policies, tt.policy)
			case !apiequality.Semantic.DeepEqual(policies[0].Spec, v1alpha1.GPUNodePolicySpec{}):
				t.Errorf("spec = %+v, want the empty spec (every GPU node, the defaults)", policies[0].Spec)
			}
		})
	}
}

// Once the agent holds every node (the only nodes of the cluster are GPU nodes), a new
// controller pod must still be schedulable: nothing but the controller releases a held
// node, and a controller that does not tolerate the holds deadlocks the cluster.
func TestEveryGPUNodePodToleratesTheTaintsOfANodeGPUNodeHolds(t *testing.T) {
	held := []corev1.Taint{
		{Key: v1alpha1.TaintNotAccepted, Effect: corev1.TaintEffectNoSchedule},
		{Key: v1alpha1.TaintUnschedulable, Value: "acceptance-failed", Effect: corev1.TaintEffectNoSchedule},
	}
	dedicated := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "infra", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name   string
		values string
		extra  []corev1.Toleration
	}{
		{"with the default values", "", nil},
		{"with extra tolerations, which add to gpunode's own", "controller: {tolerations: [{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]}\n" +
			"agent: {tolerations: [{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]}", []corev1.Toleration{dedicated}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := render(t, tt.values)
			for name, pod := range map[string]corev1.PodSpec{
				"the agent":      agentDaemonSet(t, ms).Spec.Template.Spec,
				"the controller": controllerDeployment(t, ms).Spec.Template.Spec,
			} {
				for _, taint := range held {
					if !slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool {
						return tol.ToleratesTaint(klog.Background(), &taint, false)
					}) {
						t.Errorf("%s does not tolerate %s=%s:%s: tolerations %+v", name, taint.Key, taint.Value, taint.Effect, pod.Tolerations)
					}
				}
				for _, want := range tt.extra {
					if !slices.Contains(pod.Tolerations, want) {
						t.Errorf("%s lacks the extra toleration %+v: %+v", name, want, pod.Tolerations)
					}
				}
			}
		})
	}
}

func controllerDeployment(t *testing.T, ms []manifest) *appsv1.Deployment {
	t.Helper()
	d := find[*appsv1.Deployment](ms, "Deployment", "gpunode-controller")
	if d == nil {
		t.Fatalf("no Deployment gpunode-controller among %v", kinds(ms))
	}
	return d
}

// indent puts prefix before every line of the YAML text s, after a first newline.
func indent(s, prefix string) string {
	out := ""
	for line := range strings.Lines(strings.TrimLeft(s, "\n")) {
		out += "\n" + prefix + strings.TrimRight(line, "\n")
	}
	return out + "\n"
}
