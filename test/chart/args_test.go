package chart_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/internal/cli"
)

// Every container's arguments, in every install mode, name a gpunode command and flags that
// command really has, with values it accepts: a renamed flag fails here, not in a crash loop
// on every GPU node.
func TestEveryContainerRunsARealCommandWithFlagsItAccepts(t *testing.T) {
	for _, mode := range installModes {
		t.Run(mode.name, func(t *testing.T) {
			var containers []corev1.Container
			for _, m := range render(t, mode.values) {
				switch w := m.typed.(type) {
				case *appsv1.DaemonSet:
					containers = append(containers, w.Spec.Template.Spec.Containers...)
				case *appsv1.Deployment:
					containers = append(containers, w.Spec.Template.Spec.Containers...)
				}
			}
			if len(containers) == 0 {
				t.Fatal("no containers rendered")
			}
			for _, c := range containers {
				cmd, rest, err := cli.NewRootCommand().Find(c.Args)
				if err != nil || cmd.Name() != c.Args[0] {
					t.Errorf("container %s: %v does not name a gpunode command (found %q, %v)", c.Name, c.Args, cmd.Name(), err)
					continue
				}
				if err := cmd.ParseFlags(rest); err != nil {
					t.Errorf("container %s: gpunode %s refuses %v: %v", c.Name, c.Args[0], rest, err)
				}
			}
		})
	}
}
