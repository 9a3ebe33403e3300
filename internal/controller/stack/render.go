package stack

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// Host paths of the operands (docs/stack.md says why each is needed).
const (
	// DriverRoot is where the driver container installs the driver for the host and the
	// other containers (/run/nvidia/driver), shared back to the host (Bidirectional).
	DriverRoot = "/run/nvidia"
	// ContainerDriverRoot is the driver's root when it runs as a container.
	ContainerDriverRoot = "/run/nvidia/driver"
	// ToolkitInstallDir is where the toolkit installs its runtime binaries on the host.
	ToolkitInstallDir = "/usr/local/nvidia"
	// ContainerdConfigDir and ContainerdSocket are containerd's config directory and socket.
	ContainerdConfigDir = "/etc/containerd"
	ContainerdSocket    = "/run/containerd/containerd.sock"
)

// DaemonSetName is the name of pool's DaemonSet of component ("driver", "toolkit" or
// "agent").
func DaemonSetName(pool, component string) string {
	return "gpunode-" + pool + "-" + component
}

// Image is the image an operand runs: image as given when it has a tag or a digest, else
// image with ":<tagPrefix><version>"; with registry set, the registry host and path are
// replaced by registry (the last path element, tag and digest stay).
func Image(image, tagPrefix, version, registry string) string {
	name := image
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	if !strings.ContainsAny(name, ":@") && version != "" {
		image += ":" + tagPrefix + version
		name += ":" + tagPrefix + version
	}
	if registry == "" {
		return image
	}
	return strings.TrimSuffix(registry, "/") + "/" + name
}

// Render is the DaemonSets pool p must have in namespace: one per operand whose source is
// Container, except an operand the GPU Operator deploys on every node (g). The driver
// DaemonSet keeps off the nodes named in excluded (the nodes an NVIDIADriver selects). The
// agent's is rendered from agentTemplate, the chart's agent DaemonSet (none when nil). All
// are updateStrategy OnDelete: a template change reaches a node only when its pod is
// deleted.
func Render(p *v1alpha1.StackPool, namespace string, g GPUOperator, excluded []string, agentTemplate *appsv1.DaemonSet) []*appsv1.DaemonSet {
	var out []*appsv1.DaemonSet
	driverOwned := false
	if p.Spec.Driver.Source == v1alpha1.SourceContainer {
		if _, _, all := g.DriverOwnsAll(); !all {
			out = append(out, driverDaemonSet(p, namespace, excluded))
		} else {
			driverOwned = true
		}
	}
	if p.Spec.Toolkit.Source == v1alpha1.SourceContainer {
		if owner, _ := g.ToolkitOwner(); owner == "" {
			driverContainer := p.Spec.Driver.Source == v1alpha1.SourceContainer && !driverOwned
			out = append(out, toolkitDaemonSet(p, namespace, driverContainer))
		}
	}
	if AgentSource(p) == v1alpha1.SourceContainer && agentTemplate != nil {
		out = append(out, agentDaemonSet(p, namespace, agentTemplate))
	}
	return out
}

func driverDaemonSet(p *v1alpha1.StackPool, namespace string, excluded []string) *appsv1.DaemonSet {
	d := p.Spec.Driver
	ds := daemonSet(p, namespace, ComponentDriver, d.Version)
	spec := &ds.Spec.Template.Spec
	spec.PriorityClassName = "system-node-critical"
	spec.HostPID = true // the driver container loads kernel modules and manages the persistence daemon
	if len(excluded) > 0 {
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: excluded}},
			}}},
		}}
	}
	spec.Containers = []corev1.Container{{
		Name:            "nvidia-driver",
		Image:           Image(d.Image, "", d.Version, p.Spec.Registry),
		ImagePullPolicy: corev1.PullIfNotPresent,
		// The image's own entrypoint: the vendor image's is `nvidia-driver init`.
		Env:             []corev1.EnvVar{{Name: "GPUNODE_DRIVER_VERSION", Value: d.Version}},
		SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "run-nvidia", MountPath: DriverRoot, MountPropagation: ptr.To(corev1.MountPropagationBidirectional)},
			{Name: "dev", MountPath: "/dev"},
			{Name: "lib-modules", MountPath: "/lib/modules", ReadOnly: true},
			{Name: "var-log", MountPath: "/var/log"},
		},
	}}
	spec.Volumes = []corev1.Volume{
		hostPath("run-nvidia", DriverRoot, corev1.HostPathDirectoryOrCreate),
		hostPath("dev", "/dev", corev1.HostPathDirectory),
		hostPath("lib-modules", "/lib/modules", corev1.HostPathDirectory),
		hostPath("var-log", "/var/log", corev1.HostPathDirectory),
	}
	return ds
}

func toolkitDaemonSet(p *v1alpha1.StackPool, namespace string, driverContainer bool) *appsv1.DaemonSet {
	t := p.Spec.Toolkit
	ds := daemonSet(p, namespace, ComponentToolkit, t.Version)
	spec := &ds.Spec.Template.Spec
	spec.PriorityClassName = "system-node-critical"
	spec.HostPID = true // the toolkit signals containerd to reload its config
	driverRoot := "/"
	if driverContainer {
		driverRoot = ContainerDriverRoot
	}
	c := corev1.Container{
		Name:            "nvidia-container-toolkit",
		Image:           Image(t.Image, "v", t.Version, p.Spec.Registry),
		ImagePullPolicy: corev1.PullIfNotPresent,
		Env: []corev1.EnvVar{
			{Name: "RUNTIME", Value: "containerd"},
			{Name: "RUNTIME_CONFIG", Value: ContainerdConfigDir + "/config.toml"},
			{Name: "RUNTIME_SOCKET", Value: ContainerdSocket},
			{Name: "CDI_ENABLED", Value: "true"},
			{Name: "NVIDIA_DRIVER_ROOT", Value: driverRoot},
			{Name: "GPUNODE_TOOLKIT_VERSION", Value: t.Version},
		},
		SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "containerd-config", MountPath: ContainerdConfigDir},
			{Name: "containerd-socket", MountPath: ContainerdSocket},
			{Name: "cdi-static", MountPath: "/etc/cdi"},
			{Name: "cdi-dynamic", MountPath: "/var/run/cdi"},
			{Name: "toolkit-install", MountPath: ToolkitInstallDir},
		},
	}
	spec.Volumes = []corev1.Volume{
		hostPath("containerd-config", ContainerdConfigDir, corev1.HostPathDirectoryOrCreate),
		hostPath("containerd-socket", ContainerdSocket, corev1.HostPathSocket),
		hostPath("cdi-static", "/etc/cdi", corev1.HostPathDirectoryOrCreate),
		hostPath("cdi-dynamic", "/var/run/cdi", corev1.HostPathDirectoryOrCreate),
		hostPath("toolkit-install", ToolkitInstallDir, corev1.HostPathDirectoryOrCreate),
	}
	if driverContainer {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "run-nvidia", MountPath: DriverRoot, MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)})
		spec.Volumes = append(spec.Volumes, hostPath("run-nvidia", DriverRoot, corev1.HostPathDirectoryOrCreate))
	}
	spec.Containers = []corev1.Container{c}
	return ds
}

// daemonSet is the frame of pool p's DaemonSet of component at version: names, labels,
// owner, selector, OnDelete, the pool's nodes and gpunode's hold taints tolerated.
func daemonSet(p *v1alpha1.StackPool, namespace, component, version string) *appsv1.DaemonSet {
	selector := map[string]string{LabelComponent: component, v1alpha1.LabelStackPool: p.Name}
	podLabels := map[string]string{
		LabelComponent: component, v1alpha1.LabelStackPool: p.Name, v1alpha1.LabelOperandVersion: version,
		"app.kubernetes.io/name": "gpunode", "app.kubernetes.io/managed-by": v1alpha1.FieldManagerStack,
	}
	return &appsv1.DaemonSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name: DaemonSetName(p.Name, component), Namespace: namespace, Labels: podLabels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "StackPool", Name: p.Name, UID: p.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: selector},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					NodeSelector:     map[string]string{v1alpha1.LabelStackPool: p.Name},
					ImagePullSecrets: p.Spec.ImagePullSecrets,
					Tolerations: []corev1.Toleration{
						// The operands must run on the nodes gpunode holds: a node is held until
						// they are ready.
						{Key: v1alpha1.TaintNotAccepted, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
						{Key: v1alpha1.TaintUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
						{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
					},
				},
			},
		},
	}
}

func hostPath(name, path string, typ corev1.HostPathType) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(typ)}}}
}
