package cli

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gpunode/gpunode/internal/controller/acceptance"
	"github.com/gpunode/gpunode/internal/controller/baseline"
	"github.com/gpunode/gpunode/internal/controller/policystatus"
	"github.com/gpunode/gpunode/internal/controller/remediation"
	"github.com/gpunode/gpunode/internal/controller/stack"
)

// leaderElectionID names the controller's Lease.
const leaderElectionID = "gpunode-controller.gpunode.dev"

type controllerOptions struct {
	kubeconfig         string
	leaderElect        bool
	leaderElectionNS   string
	metricsAddress     string
	healthProbeAddress string
	qps                float32
	burst              int
	remediation        bool
	stack              bool
	stackNamespace     string
	stackAgentTemplate string
}

func newControllerCommand() *cobra.Command {
	o := &controllerOptions{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the cluster controller: acceptance gating and remediation of GPU nodes",
		Long: `Run gpunode's cluster controller (one per cluster, as a Deployment). For each GPUNode it
selects a GPUNodePolicy (nodeSelector on the Node's labels; highest priority wins), asks the
node's agent for an acceptance run when the node is new or its policy, GPU inventory or driver
changed, judges the AcceptanceRecord against the policy, and releases the node's acceptance
hold when it passes, or keeps it, with the reason in status and an Event, when it fails.

With --remediation (the default) it also isolates and recovers faulty nodes: a GPU whose
health engine requires an action holds the node (owner remediation), the agent captures an
evidence bundle, and the recovery ladder runs (restart-app, reset-gpu, reload-driver,
reboot-node, power-cycle), each step followed by acceptance, within each pool's budget and
circuit breaker, ending in Maintenance when nothing clears the fault. A pool turns it off
with spec.remediation.disabled; docs/remediation.md has the rules.

With --stack (the default) it deploys the StackPools' operands: the driver, container
toolkit and (from the pod template of --stack-agent-template) agent DaemonSets
(updateStrategy OnDelete) in --stack-namespace, the gpunode.dev/stack-pool label on each
member Node, and a hold (owner stack) on a member until its operands are ready on it, or on
a Node two pools select; docs/stack.md has the model.

It keeps one PerformanceBaseline per GPU model and driver version: the median of each
performance metric over the accepted nodes' latest AcceptanceRecords (docs/performance.md).

With --leader-elect (the default) only the replica holding the Lease
` + leaderElectionID + ` in --leader-election-namespace acts. Metrics are served on
--metrics-bind-address (/metrics) and liveness and readiness on --health-probe-bind-address
(/healthz, /readyz); "0" turns either off. Stops cleanly on SIGINT or SIGTERM.`,
		Example: `  gpunode controller
  gpunode controller --kubeconfig ~/.kube/config --leader-elect=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runController(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	fs.BoolVar(&o.remediation, "remediation", true, "isolate and recover faulty GPU nodes (false: acceptance gating only)")
	fs.BoolVar(&o.stack, "stack", true, "deploy and judge the StackPools' driver and toolkit (false: no stack pools)")
	fs.StringVar(&o.stackAgentTemplate, "stack-agent-template", "", "the chart's agent DaemonSet in --stack-namespace: a StackPool whose agent is a Container runs its pod template (\"\": no pool agent DaemonSets)")
	fs.StringVar(&o.stackNamespace, "stack-namespace", "", "namespace of the StackPools' DaemonSets (default: --leader-election-namespace, the controller's own)")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "act only while holding the leader Lease (run more than one replica safely)")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", "gpunode-system", "namespace of the leader Lease")
	fs.StringVar(&o.metricsAddress, "metrics-bind-address", ":8080", `address of the metrics endpoint ("0": off)`)
	fs.StringVar(&o.healthProbeAddress, "health-probe-bind-address", ":8081", `address of /healthz and /readyz ("0": off)`)
	// client-go's default (5 requests/s, bursts of 10) makes a fleet wait: 50 joining nodes
	// took 90 s to be released with it and 4 s without the limit (docs/benchmarks.md).
	fs.Float32Var(&o.qps, "kube-api-qps", 50, "requests per second to the API server")
	fs.IntVar(&o.burst, "kube-api-burst", 100, "request burst to the API server")
	return cmd
}

// restConfig loads the kubeconfig file named, or the default chain when none is.
func restConfig(path string) (*rest.Config, error) {
	return (&clusterFlags{kubeconfig: path}).restConfig()
}

func runController(ctx context.Context, o *controllerOptions) error {
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	if o.qps <= 0 || o.burst <= 0 {
		return usageErrorf("--kube-api-qps and --kube-api-burst must be positive")
	}
	cfg.QPS, cfg.Burst = o.qps, o.burst
	// controller-runtime's logs and client-go's (klog: leader election) go through the
	// process's handler, so --log-format json gives JSON lines only.
	logger := logr.FromSlogHandler(namedLogger("controller").Handler())
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("client-go"))
	return runManagers(ctx, o.leaderElect, namedLogger("controller"), func(first bool) (manager.Manager, error) {
		return newControllerManager(cfg, o, !first)
	})
}

// newControllerManager builds the manager and its controllers. again is true for a manager
// built after the previous one lost its Lease: controller names were registered by it.
func newControllerManager(cfg *rest.Config, o *controllerOptions, again bool) (manager.Manager, error) {
	scheme, err := acceptance.Scheme()
	if err != nil {
		return nil, err
	}
	stackNS := cmp.Or(o.stackNamespace, o.leaderElectionNS)
	// Nothing the controllers read needs managedFields (their writes are merge patches or
	// applies built afresh): stripping them saves about 40% of each cached GPUNode (test/scale).
	cacheOptions := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if o.stack {
		cacheOptions.ByObject = stack.CacheOptions(stackNS) // the operand pods alone, not every pod
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Client:                        remediation.ClientOptions(), // Nodes and Pods uncached: a superset of acceptance's
		Cache:                         cacheOptions,
		Metrics:                       metricsserver.Options{BindAddress: o.metricsAddress},
		HealthProbeBindAddress:        o.healthProbeAddress,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              leaderElectionID,
		LeaderElectionNamespace:       o.leaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(30 * time.Second),
		Controller:                    config.Controller{SkipNameValidation: ptr.To(again)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the controller manager for %s: %w", cfg.Host, err)
	}
	r := &acceptance.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(acceptance.Name), Clock: clock.RealClock{},
		DaemonSets: mgr.GetAPIReader()}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	ps := &policystatus.Reconciler{Client: mgr.GetClient(), Reader: mgr.GetCache()}
	if err := ps.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	br := &baseline.Reconciler{Client: mgr.GetClient(), Reader: mgr.GetCache(), Records: mgr.GetAPIReader(), Clock: clock.RealClock{}}
	if err := br.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if o.remediation {
		rr := &remediation.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(remediation.Name), Clock: clock.RealClock{}}
		if err := rr.SetupWithManager(mgr); err != nil {
			return nil, err
		}
	}
	if err := registerHoldMetrics(mgr); err != nil {
		return nil, err
	}
	if o.stack {
		sr := &stack.Reconciler{Client: mgr.GetClient(), Cache: mgr.GetCache(), Recorder: mgr.GetEventRecorder(stack.Name),
			Clock: clock.RealClock{}, Namespace: stackNS, AgentTemplate: o.stackAgentTemplate}
		if err := sr.SetupWithManager(mgr); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the readiness check: %w", err)
	}
	return mgr, nil
}
