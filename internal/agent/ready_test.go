package agent_test

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpunode/gpunode/internal/agent"
)

// The agent is ready once its health monitor has polled the GPUs, whether or not it could
// publish (here the Node does not exist, so every round fails and is retried).
func TestTheAgentIsReadyAfterItsHealthMonitorsFirstRound(t *testing.T) {
	cfg, _ := simConfig(t, fake.NewClientBuilder().Build(), "gpu-node-ready")
	cfg.Interval = time.Hour // no second poll: the first round alone makes it ready
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Ready(); err == nil {
		t.Fatal("Ready before Run: nil, want the monitor not to have polled yet")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("the agent stopped: %v", err)
		}
	}()
	eventually(t, "the agent is ready", a.Ready)
}
