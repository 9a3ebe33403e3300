package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/internal/cdispec"
	"github.com/gpunode/gpunode/internal/deviceplugin"
	"github.com/gpunode/gpunode/internal/labels"
	"github.com/gpunode/gpunode/internal/platform"
)

// pluginOptions are the agent's device-plugin flags.
type pluginOptions struct {
	enabled  bool
	dir      string
	strategy string
	config   string
	cdiDir   string
	mig      string
}

func (o *pluginOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.enabled, "device-plugin", false, "also serve the kubelet device plugin for nvidia.com/gpu (and MIG and shared resources per --device-plugin-config), with each GPU's health from the health monitor (replaces NVIDIA's device plugin: run only one)")
	fs.StringVar(&o.dir, "device-plugin-dir", "/var/lib/kubelet/device-plugins", "the kubelet's device-plugins folder")
	fs.StringVar(&o.strategy, "device-plugin-strategy", "", "how allocated devices reach the container: envvar (NVIDIA_VISIBLE_DEVICES), cdi-annotations or cdi-cri (CDI device names) (default: the config file's flags.plugin.deviceListStrategy, else envvar)")
	fs.StringVar(&o.config, "device-plugin-config", "", "device plugin configuration file (NVIDIA k8s-device-plugin format v1: flags.migStrategy, flags.plugin.deviceListStrategy, sharing.timeSlicing); the node label gpunode.dev/gpu.replicas overrides the nvidia.com/gpu replicas")
	fs.StringVar(&o.mig, "mig-strategy", "", "how the node's MIG devices are exposed, as NVIDIA's device plugin's --mig-strategy: none, single or mixed; the label nvidia.com/mig.strategy says it, and the agent's own device plugin serves it (default: the config file's flags.migStrategy, else none)")
	fs.StringVar(&o.cdiDir, "cdi-spec-dir", cdispec.DefaultDir, "where the CDI spec of the GPUs is written for the cdi-annotations and cdi-cri strategies (\"none\": not written)")
}

// migStrategies are the values of --mig-strategy.
var migStrategies = []string{labels.MIGStrategyNone, labels.MIGStrategySingle, labels.MIGStrategyMixed}

// checkMIG refuses a --mig-strategy other than none, single or mixed (exit 2).
func (o *pluginOptions) checkMIG() error {
	if o.mig != "" && !slices.Contains(migStrategies, o.mig) {
		return usageErrorf("--mig-strategy %q: want one of %v", o.mig, migStrategies)
	}
	return nil
}

// labelConfig is the GPU Feature Discovery label configuration: that of the agent's own
// device plugin's sharing when it serves one (s), else whole GPUs under --mig-strategy
// (NVIDIA's device plugin, or none, advertises them).
func (o *pluginOptions) labelConfig(s *deviceplugin.Sharing) labels.Config {
	if s != nil {
		return s.LabelConfig()
	}
	return labels.Config{MIGStrategy: o.mig}
}

// nodeReadTimeout bounds the read of the node's labels at start.
const nodeReadTimeout = 5 * time.Second

// sharing reads the configuration file and applies the node's labels. The labels are read
// once, at start; a node that cannot be read (API server unreachable) is logged and the
// file's configuration used, so that an API outage does not take the GPUs off the node.
func (o *pluginOptions) sharing(ctx context.Context, c client.Client, node string, log *slog.Logger) (deviceplugin.Sharing, error) {
	if o.strategy != "" && !slices.Contains(deviceplugin.Strategies(), deviceplugin.Strategy(o.strategy)) {
		return deviceplugin.Sharing{}, usageErrorf("--device-plugin-strategy %q: want one of %v", o.strategy, deviceplugin.Strategies())
	}
	var s deviceplugin.Sharing
	if o.config != "" {
		var err error
		if s, err = deviceplugin.LoadConfig(o.config); err != nil {
			return s, usageError(fmt.Errorf("--device-plugin-config: %w", err))
		}
	}
	if o.mig != "" { // the flag wins over the file's flags.migStrategy, as --device-plugin-strategy does
		s.MIGStrategy = o.mig
	}
	ctx, cancel := context.WithTimeout(ctx, nodeReadTimeout)
	defer cancel()
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		log.Warn("device plugin: the node's sharing labels are not applied", "node", node, "err", err)
		return s, nil
	}
	out, err := s.WithNodeLabels(n.Labels)
	if err != nil {
		// Configuration from the cluster is reported, never a reason to stop: an agent that
		// exited here would leave the node unmonitored and unheld (a crash loop).
		log.Error("device plugin: a node label is refused; the configuration file's replicas are served", "node", node, "err", err)
		if evErr := badNodeLabelEvent(ctx, c, &n, err.Error(), time.Now()); evErr != nil {
			log.Warn("device plugin: the refused label's Event was not recorded", "node", node, "err", evErr)
		}
		return s, nil
	}
	return out, nil
}

// badNodeLabelEvent records a Warning Event on the Node naming the label refused.
func badNodeLabelEvent(ctx context.Context, c client.Client, n *corev1.Node, problem string, now time.Time) error {
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: fmt.Sprintf("%s.%x", n.Name, now.UnixNano())},
		EventTime:  metav1.NewMicroTime(now), ReportingController: "gpunode.dev/agent", ReportingInstance: clip("gpunode-agent@"+n.Name, 128),
		Action: "ReadNodeLabels", Reason: "BadNodeLabel", Type: corev1.EventTypeWarning,
		Note:      clip(problem+"; the agent serves the configuration file's replicas until the label is fixed and the agent restarted", 1024),
		Regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID},
	}
	if err := c.Create(ctx, ev); err != nil {
		return fmt.Errorf("creating the BadNodeLabel Event of node %q: %w", n.Name, err)
	}
	return nil
}

// start builds the plugins (and the CDI spec keeper) and returns what runs them.
func (o *pluginOptions) start(ctx context.Context, plat *platform.Platform, health deviceplugin.HealthSource,
	s deviceplugin.Sharing, interval time.Duration, log *slog.Logger) (func(context.Context) error, error) {
	backend := plat.Backend
	plugins, err := deviceplugin.NewAll(ctx, deviceplugin.Config{Backend: backend, Health: health,
		Strategy: deviceplugin.Strategy(o.strategy), Sharing: s, Dir: o.dir, Log: log})
	if err != nil {
		return nil, usageError(fmt.Errorf("--device-plugin: %w", err))
	}
	for _, p := range plugins {
		log.Info("device plugin: resource", "name", p.ResourceName(), "devices", len(p.Devices()))
	}
	strategy := deviceplugin.Strategy(o.strategy)
	if strategy == "" {
		strategy = s.Strategy
	}
	cdi := (strategy == deviceplugin.StrategyCDICRI || strategy == deviceplugin.StrategyCDIAnnotations) && o.cdiDir != "none"
	if !cdi {
		return func(ctx context.Context) error { return deviceplugin.RunAll(ctx, plugins) }, nil
	}
	// Simulated GPUs have no driver files to discover: their spec's nodes are /dev/null.
	keeper := &cdispec.Keeper{Root: plat.Root(), Dir: o.cdiDir, Log: log, Simulated: plat.Simulated()}
	snap, err := backend.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("device plugin: CDI spec: %w", err)
	}
	if _, err := keeper.Sync(snap); err != nil {
		return nil, fmt.Errorf("--device-plugin-strategy %s needs a CDI spec: %w", strategy, err)
	}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		cdiDone := make(chan error, 1)
		go func() { cdiDone <- keeper.Run(ctx, backend, interval) }()
		err := deviceplugin.RunAll(ctx, plugins)
		cancel()
		return errors.Join(err, <-cdiDone)
	}, nil
}
