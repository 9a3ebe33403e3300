package cli

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpunode/gpunode/internal/controller/holdmetrics"
)

// registerHoldMetrics serves gpunode_node_hold_seconds on the controller's /metrics from
// mgr's cache, while mgr leads. A manager built after a lost Lease replaces the previous
// one's collector.
func registerHoldMetrics(mgr manager.Manager) error {
	elected := mgr.Elected()
	c := &holdmetrics.Collector{Reader: mgr.GetCache(), Leading: func() bool {
		select {
		case <-elected:
			return true
		default:
			return false
		}
	}}
	ctrlmetrics.Registry.Unregister(c) // the previous manager's, if any
	if err := ctrlmetrics.Registry.Register(c); err != nil {
		return fmt.Errorf("registering the hold metrics: %w", err)
	}
	return nil
}
