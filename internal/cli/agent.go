package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/deviceplugin"
	"github.com/gpunode/gpunode/internal/dra"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/kmsg"
	"github.com/gpunode/gpunode/internal/labels"
	"github.com/gpunode/gpunode/internal/metrics"
	"github.com/gpunode/gpunode/internal/monitor"
	"github.com/gpunode/gpunode/internal/podresources"
	"github.com/gpunode/gpunode/internal/record"
	"github.com/gpunode/gpunode/internal/xid"
)

type agentOptions struct {
	facts        factOptions
	kubeconfig   string
	interval     time.Duration
	labelMapping string
	plugin       pluginOptions
	dra          draOptions
	remediation  remediationOptions
	podSocket    string
	health       healthOptions
	metrics      agentMetricsOptions
	simControl   simControlOptions
}

func newAgentCommand() *cobra.Command {
	o := &agentOptions{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent: publish this node's GPUNode, labels and acceptance records",
		Long: `Run the node agent (a DaemonSet pod on every GPU node) until interrupted.

The agent starts before the driver too: while NVML cannot be initialised (no library, no
kernel module) it retries with backoff, reports why in status.stack.driver and serves no
GPUs; once the driver answers it goes on. While the GPU Operator pauses the node's GPU
clients (a nvidia.com/gpu.deploy.* label set to paused-for-driver-upgrade or
paused-for-mig-change) it releases NVML and the device files: its device or DRA plugin
stops serving and the metrics report the GPUs unreadable, until the label goes back.
status.stack.toolkit says whether containerd's runtime config and the CDI specs pass the
L0 checks host.containerd and host.cdi.

At first start it creates the node's GPUNode and holds the node with the taint
gpunode.dev/not-accepted:NoSchedule until the controller accepts it. Then, every --interval
and whenever a GPU's health changes, it publishes the GPUNode status (inventory, versions,
accelerator class, per-GPU health from the health monitor, the GPUHealthy condition) and
applies the GPU Feature Discovery and platform labels to the Node with server-side apply
(field manager gpunode-agent: labels it does not own are never touched). When the
controller raises spec.acceptanceGeneration it runs node-local acceptance (as
'gpunode accept') with the GPUNodePolicy that selects the node (the built-in defaults of
'gpunode accept' when none does) and publishes an AcceptanceRecord. Every --interval (at
least 30 s apart) it writes a heartbeat (status.agent.heartbeatTime) while its loop makes
progress: the controller holds a node whose agent is silent for the policy's
agentLostAfter. Each GPU's health lists the pods holding it (from the kubelet's
pod-resources socket) and its process count. The controller's remediation requests are
carried out with --reset-command, --reboot-command and --power-cycle-command, after an
evidence bundle is written under --state-dir. API errors are retried with capped
exponential backoff; the latest state is published once the API server answers.

The record of each acceptance run is also kept in --state-dir/records (the newest 20).
The agent serves this node's GPU metrics on --metrics-bind-address (:9400): what 'gpunode
exporter' serves (dcgm-exporter compatible DCGM_FI_DEV_* series, per-GPU health, findings,
XIDs, the last acceptance result from --state-dir/records), from the agent's own health
monitor, so a recovery the agent records shows at the next scrape. /healthz and /readyz on
--health-probe-bind-address are the pod's probes: ready once the health monitor has polled
the GPUs. On simulated GPUs (--sim) faults are injected through --sim-control-socket with
'gpunode sim inject NODE --socket PATH'.

With --dra the agent runs the kubelet DRA plugin of the driver gpu.gpunode.dev instead of
its device plugin (unless the node's label gpunode.dev/gpu-api is device-plugin): the node's
GPUs in a ResourceSlice with each GPU's health as a device taint, claims prepared into CDI
specs and checkpointed under --dra-plugin-dir.

The node name comes from --node-name or $NODE_NAME (the downward API's spec.nodeName).`,
		Example: `  # in the DaemonSet (NODE_NAME from the downward API, in-cluster credentials)
  gpunode agent --host-root /host
  # against a test cluster, on 8 simulated H100s
  gpunode agent --node-name gpu-1 --kubeconfig ~/.kube/config --sim h100x8 --interval 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgent(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	o.facts.addFlags(fs)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else the in-cluster service account)")
	fs.DurationVar(&o.interval, "interval", 30*time.Second, "how often the status is published and the GPUs are polled")
	fs.StringVar(&o.labelMapping, "label-mapping", "", "accelerator-class mapping YAML that extends or overrides the built-in one")
	fs.StringVar(&o.podSocket, "pod-resources-socket", podresources.DefaultSocket, "the kubelet's pod-resources socket: the pods on each GPU in the GPUNode status and in evidence bundles (\"\" to disable; while it cannot be read the pods are left out)")
	o.plugin.addFlags(fs)
	o.dra.addFlags(fs)
	o.remediation.addFlags(fs)
	o.health.addFlags(fs)
	o.metrics.addFlags(fs)
	o.simControl.addFlags(fs)
	return cmd
}

func runAgent(ctx context.Context, o *agentOptions) error {
	if o.interval <= 0 {
		return usageErrorf("--interval %s: must be positive", o.interval)
	}
	if err := o.simControl.check(o.facts.gpu.sim); err != nil {
		return err
	}
	if err := o.metrics.check(); err != nil {
		return err
	}
	if err := o.plugin.checkMIG(); err != nil {
		return err
	}
	node := o.facts.node
	if node == "" {
		node = os.Getenv("NODE_NAME")
	}
	if node == "" {
		return usageErrorf("no node name: give --node-name or set NODE_NAME")
	}
	mapping := labels.Mapping{}
	if o.labelMapping != "" {
		m, err := labels.LoadMapping(o.labelMapping)
		if err != nil {
			return usageError(err)
		}
		mapping = m
	}
	if err := o.dra.check(); err != nil {
		return err
	}
	c, err := agentClient(o.kubeconfig)
	if err != nil {
		return err
	}
	log := namedLogger("agent")
	plat, err := o.facts.openAgentPlatform(log)
	if err != nil {
		return err
	}
	defer func() { _ = plat.Close() }()
	driverCtx, stopDriver := context.WithCancel(context.WithoutCancel(ctx))
	driverDone := make(chan struct{})
	go func() { defer close(driverDone); plat.RunDriver(driverCtx) }()
	go logDriverState(driverCtx, plat.Driver(), log)
	defer func() { stopDriver(); <-driverDone }() // after everything that reads the GPUs
	backend := plat.Backend
	var health *deviceplugin.MonitorSource
	var a *agent.Agent
	var sharing deviceplugin.Sharing
	gfd := o.plugin.labelConfig(nil) // whole GPUs unless the agent's own device plugin shares them
	var draPlugin *dra.Plugin        // one API per node for nvidia.com/gpu: never both
	if o.dra.enabled && o.dra.gpuAPI(ctx, c, node, log) == gpuAPIDRA {
		o.plugin.enabled = false
		if draPlugin, err = o.dra.plugin(o.kubeconfig, node, plat, mapping, func() []monitor.GPUHealth { return a.Health() }, log); err != nil {
			return err
		}
	}
	if o.plugin.enabled {
		health = deviceplugin.NewMonitorSource(func() []monitor.GPUHealth { return a.Health() })
		if sharing, err = o.plugin.sharing(ctx, c, node, log); err != nil {
			return err
		}
		gfd = o.plugin.labelConfig(&sharing)
	}
	pods := o.podSource(&a, sharing, draDevices(&draPlugin), log)
	xids := metrics.NewXIDCounter()
	cfg := agent.Config{
		NodeName: node, Client: c, Backend: backend, Mapping: mapping, Labels: gfd, Interval: o.interval,
		OnHealthChange: func() {
			if health != nil {
				health.Notify()
			}
			if draPlugin != nil {
				draPlugin.Notify()
			}
		},
		OnPolicy: followPolicy(&draPlugin),
		Host: func(devs []gpu.Device) (*host.Reader, error) {
			return o.facts.hostReader(&accept.Facts{GPU: &gpu.Snapshot{Devices: devs}})
		},
		HostOptions: host.Options{CacheDirs: o.facts.cacheDirs},
		XIDs:        func(ctx context.Context) ([]xid.Event, error) { return o.facts.readXIDs(ctx, plat) },
		Kernel:      plat.KernelFollower(o.kernelFollower(log)),
		BootID:      plat.BootID(),
		OnFinding:   xids.Observe,
		Log:         log,
		Steps:       o.remediation.steps(plat),
		Journal:     o.remediation.journal(),
		Cleared:     agent.FileCleared{Path: filepath.Join(o.remediation.stateDir, "cleared-xids.json")},
		Evidence:    o.remediation.evidence(node, plat, &a, pods),
		Records:     &record.Store{Dir: filepath.Join(o.remediation.stateDir, "records")},
		OnPause:     plat.Driver().Pause,
	}
	switch {
	case draPlugin != nil:
		cfg.GPUAPI = v1alpha1.GPUAPIDRA
	case o.plugin.enabled:
		cfg.GPUAPI = v1alpha1.GPUAPIDevicePlugin
	}
	if pods != nil { // a nil *Cache in the interface would not be nil
		cfg.Pods = pods
	}
	if a, err = agent.New(cfg); err != nil {
		return err
	}
	probes, err := o.health.listen(ctx)
	if err != nil {
		return err
	}
	defer serveHealth(probes, a.Ready, log)()
	stopMetrics, err := o.metrics.serve(ctx, plat, node, a, xids, pods, o.remediation.stateDir, o.interval, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	defer o.simControl.serve(ctx, plat, node, o.remediation.stateDir, log)()
	if pods != nil {
		podCtx, stopPods := context.WithCancel(ctx)
		podsDone := make(chan struct{})
		go func() { defer close(podsDone); pods.Run(podCtx) }()
		defer func() { stopPods(); <-podsDone }()
	}
	if !o.plugin.enabled && draPlugin == nil {
		return a.Run(ctx)
	}
	runPlugins := inDriverSessions(plat.Driver(), log, "DRA plugin", draPluginRun(draPlugin))
	if o.plugin.enabled {
		runPlugins = inDriverSessions(plat.Driver(), log, "device plugin", func(ctx context.Context) error {
			run, err := o.plugin.start(ctx, plat, health, sharing, o.interval, log)
			if err != nil {
				return err
			}
			return run(ctx)
		})
	}
	// The plugins stop with the agent, whichever way the agent's loop ends.
	pluginCtx, stopPlugin := context.WithCancel(ctx)
	defer stopPlugin()
	pluginDone := make(chan error, 1)
	go func() { pluginDone <- runPlugins(pluginCtx) }()
	err = a.Run(ctx)
	stopPlugin()
	return errors.Join(err, <-pluginDone)
}

// kernelFollower follows /dev/kmsg from boot at every start (the XIDs recoveries cleared,
// kept in --state-dir/cleared-xids.json, are not judged again) and keeps the cursor in
// --state-dir/kmsg.cursor: records overwritten since the previous process stopped are
// reported as lost. An unusable cursor file or a failed save is logged, never fatal.
func (o *agentOptions) kernelFollower(log *slog.Logger) *kmsg.Follower {
	path := filepath.Join(o.remediation.stateDir, "kmsg.cursor")
	return &kmsg.Follower{Start: kmsg.StartBoot, StatePath: path, MinSaveInterval: time.Second,
		OnCursorError: func(err error) { log.Warn("kernel-log cursor not usable or not saved", "file", path, "err", err) }}
}

// podSource is the kubelet's pod-resources cache of --pod-resources-socket (nil when
// disabled). It files the pods of a MIG device or an index ID under the GPU, as the agent
// *a knows it, and counts the resources NVIDIA's device plugin advertises plus those the
// agent's own plugin renames under sharing. It does not fail on an absent socket: the
// kubelet may come later, and the pods are left out of the status until it answers.
func (o *agentOptions) podSource(a **agent.Agent, sharing deviceplugin.Sharing, draDevice podresources.DRADevice, log *slog.Logger) *podresources.Cache {
	if o.podSocket == "" {
		return nil
	}
	names := podresources.DefaultResourceNames()
	for _, r := range sharing.TimeSlicing.Resources {
		if r.Rename != "" && !slices.Contains(names, r.Rename) {
			names = append(names, r.Rename)
		}
	}
	// Refreshed as often as the status is published, at most every DefaultRefresh (10 s).
	return podresources.New(podresources.Options{Socket: o.podSocket, Log: log, ResourceNames: names,
		Refresh:   min(o.interval, podresources.DefaultRefresh),
		ParentGPU: func(id string) (string, bool) { return (*a).ParentGPU(id) }, DRADevice: draDevice})
}

// agentClient is a client that reads from the API server (no cache: the agent reads two
// objects per round) with the built-in kinds and gpunode's.
func agentClient(kubeconfig string) (client.WithWatch, error) {
	cfg, err := agentRESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("agent scheme: %w", err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("agent scheme: %w", err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	return c, nil
}

// agentRESTConfig loads kubeconfig, else $KUBECONFIG or ~/.kube/config, else the
// in-cluster configuration.
func agentRESTConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		if _, err := os.Stat(kubeconfig); err != nil {
			return nil, usageErrorf("--kubeconfig %s: %w", kubeconfig, err)
		}
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the Kubernetes client configuration: %w", err)
	}
	cfg.UserAgent = "gpunode-agent"
	return cfg, nil
}
