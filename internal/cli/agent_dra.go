package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/cdispec"
	"github.com/gpunode/gpunode/internal/dra"
	"github.com/gpunode/gpunode/internal/labels"
	"github.com/gpunode/gpunode/internal/monitor"
	"github.com/gpunode/gpunode/internal/nodepolicy"
	"github.com/gpunode/gpunode/internal/platform"
	"github.com/gpunode/gpunode/internal/podresources"
)

// The values of the node label gpunode.dev/gpu-api.
const (
	gpuAPIDevicePlugin = v1alpha1.GPUAPIDevicePlugin
	gpuAPIDRA          = v1alpha1.GPUAPIDRA
)

// draOptions are the agent's DRA plugin flags.
type draOptions struct {
	enabled     bool
	pluginDir   string
	registryDir string
	cdiDir      string
	evict       bool
	podUID      string
}

func (o *draOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.enabled, "dra", false, "also run the kubelet DRA plugin of the driver "+dra.DriverName+" (ResourceSlices of the node's GPUs with their health as device taints, claims prepared into CDI specs); on a node whose label "+dra.GPUAPILabel+" is device-plugin the device plugin runs instead")
	fs.StringVar(&o.pluginDir, "dra-plugin-dir", dra.PluginDir, "the DRA plugin's folder: its socket and the checkpoint of prepared claims (the same path in the pod as on the host)")
	fs.StringVar(&o.registryDir, "dra-registry-dir", dra.RegistryDir, "the kubelet's plugin registration folder")
	fs.StringVar(&o.cdiDir, "dra-cdi-dir", cdispec.DefaultDir, "where each prepared claim's CDI spec is written")
	fs.BoolVar(&o.evict, "dra-evict", false, "no longer read: the GPUNodePolicy's spec.dra.unhealthyEffect says whether lost GPUs are tainted NoExecute")
	_ = fs.MarkHidden("dra-evict")
	fs.StringVar(&o.podUID, "dra-pod-uid", os.Getenv("POD_UID"), "the agent pod's UID (default $POD_UID): set, the plugin hands over to a new agent pod during a rolling update without a pause")
}

// chooseGPUAPI is the API that serves nvidia.com/gpu on a node: the node's label
// gpunode.dev/gpu-api when it names one the agent runs (dra with --dra), else dra when
// --dra is given, else the device plugin. An unknown label value, or dra without --dra,
// is reported and the default used.
func chooseGPUAPI(label string, draEnabled bool) (string, error) {
	def := gpuAPIDevicePlugin
	if draEnabled {
		def = gpuAPIDRA
	}
	switch label {
	case "":
		return def, nil
	case gpuAPIDevicePlugin:
		return gpuAPIDevicePlugin, nil
	case gpuAPIDRA:
		if !draEnabled {
			return def, fmt.Errorf("node label %s=%s: the agent runs without --dra; serving %s", dra.GPUAPILabel, label, def)
		}
		return gpuAPIDRA, nil
	}
	return def, fmt.Errorf("node label %s=%q: want %s or %s; serving %s", dra.GPUAPILabel, label, gpuAPIDevicePlugin, gpuAPIDRA, def)
}

// gpuAPI reads the node's label once, at start, and chooses. A node that cannot be read
// is logged and the default taken.
func (o *draOptions) gpuAPI(ctx context.Context, c client.Client, node string, log *slog.Logger) string {
	ctx, cancel := context.WithTimeout(ctx, nodeReadTimeout)
	defer cancel()
	var n corev1.Node
	label := ""
	if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		log.Warn("gpu api: the node's label is not read", "node", node, "label", dra.GPUAPILabel, "err", err)
	} else {
		label = n.Labels[dra.GPUAPILabel]
	}
	api, err := chooseGPUAPI(label, o.enabled)
	if err != nil {
		log.Warn("gpu api: label ignored", "node", node, "err", err)
	}
	log.Info("gpu api", "node", node, "api", api)
	return api
}

// check refuses the flag that is gone, saying what took its place.
func (o *draOptions) check() error {
	if o.evict {
		return usageError(errors.New("--dra-evict is no longer read: set spec.dra.unhealthyEffect: NoExecute in the GPUNodePolicy that governs the node"))
	}
	return nil
}

// followPolicy gives p (nil: nothing) the taint effect of the governing policy.
func followPolicy(p **dra.Plugin) func(*v1alpha1.GPUNodePolicy) {
	return func(gp *v1alpha1.GPUNodePolicy) {
		if *p != nil {
			(*p).SetUnhealthyEffect(resourceapi.DeviceTaintEffect(nodepolicy.DRAUnhealthyEffect(gp)))
		}
	}
}

// plugin builds the DRA plugin over the agent's health monitor (read through *health).
func (o *draOptions) plugin(kubeconfig, node string, plat *platform.Platform, mapping labels.Mapping,
	health func() []monitor.GPUHealth, log *slog.Logger) (*dra.Plugin, error) {
	cfg, err := agentRESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dra plugin: client for %s: %w", cfg.Host, err)
	}
	p, err := dra.New(dra.Config{NodeName: node, Client: cs, Backend: plat.Backend, Health: health,
		Class: mapping.Class, Root: plat.Root(), Simulated: plat.Simulated(),
		PCIeRoot:  dra.PCIeRootUnder(plat.HostRoot()),
		PluginDir: o.pluginDir, RegistryDir: o.registryDir, CDIDir: o.cdiDir, PodUID: o.podUID, Log: log})
	if err != nil {
		return nil, usageError(fmt.Errorf("--dra: %w", err))
	}
	return p, nil
}

// draDevices attributes the DRA claims' devices of this node's plugin (*p, once built).
func draDevices(p **dra.Plugin) podresources.DRADevice {
	return func(driver, _, device string) (string, bool) {
		if driver != dra.DriverName || *p == nil {
			return "", false
		}
		return (*p).DeviceUUID(device)
	}
}

// draPluginRun runs p (nil: nothing) until ctx ends.
func draPluginRun(p *dra.Plugin) func(context.Context) error {
	return func(ctx context.Context) error {
		if p == nil {
			return nil
		}
		return p.Run(ctx)
	}
}
