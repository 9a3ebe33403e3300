package chart_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// gpunodeArgs are the arguments of every gpunode container the chart renders with values,
// by container name.
func gpunodeArgs(t *testing.T, values string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, m := range render(t, values) {
		var cs []corev1.Container
		switch w := m.typed.(type) {
		case *appsv1.DaemonSet:
			cs = w.Spec.Template.Spec.Containers
		case *appsv1.Deployment:
			cs = w.Spec.Template.Spec.Containers
		}
		for _, c := range cs {
			out[c.Name] = c.Args
		}
	}
	return out
}

// logLevel and logFormat reach the agent and the controller as their --log-level and
// --log-format; a value the binary would refuse is refused by the chart's schema, at helm
// install, not in a crash loop.
func TestTheLogValuesReachTheAgentAndTheController(t *testing.T) {
	cases := []struct {
		name, values string
		want         []string
	}{
		{"the defaults log text from info up", "", []string{"--log-level=info", "--log-format=text"}},
		{"json for a log pipeline, from debug up", "logLevel: debug\nlogFormat: json", []string{"--log-level=debug", "--log-format=json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := gpunodeArgs(t, tc.values)
			for _, c := range []string{"agent", "controller"} {
				if args[c] == nil {
					t.Fatalf("no %s container rendered (containers: %v)", c, args)
				}
				for _, w := range tc.want {
					if !slices.Contains(args[c], w) {
						t.Errorf("%s args %v: no %s", c, args[c], w)
					}
				}
			}
		})
	}
	for _, bad := range []string{"logLevel: loud", "logFormat: xml"} {
		if _, err := renderChart(loadChart(t), bad); err == nil || !strings.Contains(err.Error(), strings.SplitN(bad, ":", 2)[0]) {
			t.Errorf("values %q: rendered, or an error that does not name the value: %v", bad, err)
		}
	}
}
