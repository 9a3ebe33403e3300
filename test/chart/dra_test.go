package chart_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/internal/testenv"
)

const draOn = "agent: {dra: {enabled: true}}"

// draModes are the DRA plugin's install modes.
var draModes = []installMode{
	{"the DRA plugin runs in the agent with the kubelet's plugin folders and the CDI folder, the classes, its RBAC and the slice policy",
		draOn,
		func(t *testing.T, ms []manifest) {
			ds := agentDaemonSet(t, ms)
			c := container(ds, "agent")
			for _, a := range []string{"--dra", "--dra-plugin-dir=/var/lib/kubelet/plugins/gpu.gpunode.dev",
				"--dra-registry-dir=/var/lib/kubelet/plugins_registry", "--dra-cdi-dir=/var/run/cdi"} {
				if !slices.Contains(c.Args, a) {
					t.Errorf("the agent's args %v lack %s", c.Args, a)
				}
			}
			if slices.Contains(c.Args, "--device-plugin") || slices.Contains(c.Args, "--dra-evict") {
				t.Errorf("args %v: no device plugin beside DRA, and eviction is the policy's, not a flag", c.Args)
			}
			for vol, path := range map[string]string{"kubelet-plugins": "/var/lib/kubelet/plugins",
				"kubelet-plugins-registry": "/var/lib/kubelet/plugins_registry", "cdi-specs": "/var/run/cdi"} {
				m := mount(c, vol)
				if m == nil || m.ReadOnly || m.MountPath != path || hostPath(ds.Spec.Template.Spec.Volumes, vol) != path {
					t.Errorf("volume %s: mount %+v, host path %q; want %s writable at the host's path", vol, m, hostPath(ds.Spec.Template.Spec.Volumes, vol), path)
				}
			}
			if e := envSource(c, "POD_UID"); e == nil || e.FieldRef == nil || e.FieldRef.FieldPath != "metadata.uid" {
				t.Errorf("POD_UID should come from the pod's metadata.uid (rolling updates): %+v", e)
			}
			gpu := find[*resourceapi.DeviceClass](ms, "DeviceClass", "gpu.gpunode.dev")
			mig := find[*resourceapi.DeviceClass](ms, "DeviceClass", "mig.gpunode.dev")
			if gpu == nil || mig == nil {
				t.Fatalf("the DeviceClasses are missing from %v", kinds(ms))
			}
			for class, typ := range map[*resourceapi.DeviceClass]string{gpu: "gpu", mig: "mig"} {
				if len(class.Spec.Selectors) != 1 || class.Spec.Selectors[0].CEL == nil ||
					!strings.Contains(class.Spec.Selectors[0].CEL.Expression, `device.driver == "gpu.gpunode.dev"`) ||
					!strings.Contains(class.Spec.Selectors[0].CEL.Expression, `device.attributes["gpu.gpunode.dev"].type == "`+typ+`"`) {
					t.Errorf("class %s selects %+v", class.Name, class.Spec.Selectors)
				}
			}
			if gpu.Spec.ExtendedResourceName != nil {
				t.Errorf("extendedResourceName %q is opt-in", *gpu.Spec.ExtendedResourceName)
			}
			for _, want := range []string{"ClusterRole/gpunode-agent-dra", "ClusterRoleBinding/gpunode-agent-dra",
				"ValidatingAdmissionPolicy/gpunode-agent-own-slices-only", "ValidatingAdmissionPolicyBinding/gpunode-agent-own-slices-only"} {
				if !slices.Contains(kinds(ms), want) {
					t.Errorf("%s is missing from %v", want, kinds(ms))
				}
			}
		}},
	{"the extended-resource class serves nvidia.com/gpu through DRA",
		"agent: {dra: {enabled: true}}\ndra: {extendedResource: {enabled: true}}",
		func(t *testing.T, ms []manifest) {
			gpu := find[*resourceapi.DeviceClass](ms, "DeviceClass", "gpu.gpunode.dev")
			if gpu == nil || gpu.Spec.ExtendedResourceName == nil || *gpu.Spec.ExtendedResourceName != "nvidia.com/gpu" {
				t.Errorf("class gpu.gpunode.dev: %+v, want extendedResourceName nvidia.com/gpu", gpu)
			}
			if mig := find[*resourceapi.DeviceClass](ms, "DeviceClass", "mig.gpunode.dev"); mig == nil || mig.Spec.ExtendedResourceName != nil {
				t.Errorf("class mig.gpunode.dev: %+v, want no extended resource", mig)
			}
		}},
	{"the DRA plugin without the chart's classes installs none", draOn + "\ndra: {deviceClasses: {create: false}}",
		func(t *testing.T, ms []manifest) {
			for _, k := range kinds(ms) {
				if strings.HasPrefix(k, "DeviceClass/") {
					t.Errorf("%s installed with dra.deviceClasses.create=false", k)
				}
			}
		}},
}

// Without agent.dra.enabled nothing of DRA is rendered: no classes, rights, policy or mounts.
func TestWithoutDRANothingOfItIsInstalled(t *testing.T) {
	ms := render(t, "dra: {deviceClasses: {create: true}, extendedResource: {enabled: true}}")
	for _, k := range kinds(ms) {
		if strings.HasPrefix(k, "DeviceClass/") || strings.HasSuffix(k, "-dra") || strings.HasSuffix(k, "own-slices-only") {
			t.Errorf("%s is installed without agent.dra.enabled", k)
		}
	}
	c := container(agentDaemonSet(t, ms), "agent")
	if slices.Contains(c.Args, "--dra") || mount(c, "kubelet-plugins") != nil || mount(c, "kubelet-plugins-registry") != nil {
		t.Errorf("the agent runs DRA or mounts the plugin folders without agent.dra.enabled: %v", c.Args)
	}
}

// The chart grants the DRA plugin exactly what internal/dra declares (config/rbac/dra).
func TestTheChartGrantsTheDRAPluginExactlyTheRulesItsCodeDeclares(t *testing.T) {
	const path = "../../config/rbac/dra/role.yaml"
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the generated RBAC: %v", err)
	}
	generated, err := decodeManifests(path, string(text))
	if err != nil || len(generated) != 1 {
		t.Fatalf("%s: %v (%d roles)", path, err, len(generated))
	}
	var declared, granted []string
	for _, r := range generated[0].typed.(*rbacv1.ClusterRole).Rules {
		declared = append(declared, expand(r)...)
	}
	role := find[*rbacv1.ClusterRole](render(t, draOn), "ClusterRole", "gpunode-agent-dra")
	if role == nil {
		t.Fatal("no ClusterRole gpunode-agent-dra with agent.dra.enabled")
	}
	for _, r := range role.Rules {
		granted = append(granted, expand(r)...)
	}
	slices.Sort(declared)
	slices.Sort(granted)
	if !slices.Equal(declared, granted) {
		t.Errorf("the chart grants the DRA plugin\n%v\nits code declares\n%v", granted, declared)
	}
}

// The agent's service account writes the ResourceSlices of its own node and is refused
// another node's: the chart's policy, binding and RBAC installed for real.
func TestTheAgentMayWriteOnlyItsOwnNodesResourceSlices(t *testing.T) {
	cfg, admin := testenv.Start(t)
	ensureNamespace(t, admin)
	for _, m := range render(t, draOn) {
		switch m.u.GetKind() {
		case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ClusterRole", "ClusterRoleBinding":
			if err := admin.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(m.u.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
				t.Fatalf("installing %s/%s: %v", m.u.GetKind(), m.u.GetName(), err)
			}
			t.Cleanup(func() { deleteObject(t, admin, m.u) })
		}
	}
	agentA := impersonate(t, cfg, agentUser, map[string][]string{nodeNameClaim: {"node-a"}})
	slice := func(name, node string) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.ResourceSliceSpec{
			Driver: "gpu.gpunode.dev", NodeName: ptr.To(node),
			Pool:    resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "gpu-0"}}}}
	}
	// The API server loads policies asynchronously: wait until node-b's slice is refused.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := agentA.Create(t.Context(), slice("b-probe", "node-b"), client.DryRunAll)
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "own-slices-only") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slice policy was not enforced within 30s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	own := slice("node-a-gpu", "node-a")
	if err := agentA.Create(t.Context(), own); err != nil {
		t.Fatalf("the agent of node-a creating its own slice: %v", err)
	}
	t.Cleanup(func() { deleteObject(t, admin, own) })
	if err := admin.Create(t.Context(), slice("node-b-gpu", "node-b")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteObject(t, admin, slice("node-b-gpu", "node-b")) })
	tests := []struct {
		name    string
		change  func(ctx context.Context) error
		refused bool
	}{
		{"the agent updates its own node's slice", func(ctx context.Context) error {
			var s resourceapi.ResourceSlice
			if err := agentA.Get(ctx, client.ObjectKey{Name: "node-a-gpu"}, &s); err != nil {
				return err
			}
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: "gpu-1"})
			return agentA.Update(ctx, &s)
		}, false},
		{"the agent is refused when it creates a slice for another node", func(ctx context.Context) error {
			return agentA.Create(ctx, slice("a-for-b", "node-b"))
		}, true},
		{"the agent is refused when it deletes another node's slice", func(ctx context.Context) error {
			return agentA.Delete(ctx, slice("node-b-gpu", "node-b"))
		}, true},
		{"the agent deletes its own node's slice", func(ctx context.Context) error {
			return agentA.Delete(ctx, own)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.change(t.Context())
			switch {
			case !tt.refused && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.refused && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may write only the ResourceSlices of its own node")):
				t.Fatalf("got %v, want Forbidden by the slice policy", err)
			}
		})
	}
}

func mount(c *corev1.Container, volume string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == volume {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func hostPath(vols []corev1.Volume, name string) string {
	for _, v := range vols {
		if v.Name == name && v.HostPath != nil {
			return v.HostPath.Path
		}
	}
	return ""
}

func envSource(c *corev1.Container, name string) *corev1.EnvVarSource {
	for _, e := range c.Env {
		if e.Name == name {
			return e.ValueFrom
		}
	}
	return nil
}

// agent.dra.evict is gone (the GPUNodePolicy's spec.dra.unhealthyEffect took its place): a
// values file that still sets it is refused at helm install, naming it.
func TestTheRemovedDRAEvictValueIsRefused(t *testing.T) {
	_, err := renderChart(loadChart(t), "agent: {dra: {enabled: true, evict: true}}")
	if err == nil || !strings.Contains(err.Error(), "evict") {
		t.Errorf("agent.dra.evict rendered, or an error that does not name it: %v", err)
	}
}
