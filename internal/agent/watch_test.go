package agent_test

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

// An agent whose client can watch answers a request long before its next interval.
func TestAWatchingAgentAnswersARequestBeforeItsNextInterval(t *testing.T) {
	restCfg, c := testenv.Start(t)
	scheme, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	w, err := client.NewWithWatch(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		noWatch bool
	}{
		{"a watching agent answers within a second", false},
		{"an agent told not to watch waits for its interval", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, cfg, _ := remediationAgent(t, c)
			cfg.Client, cfg.NoWatch = w, tt.noWatch
			cfg.Interval = time.Hour // only the first round and the watch can answer
			start(t, cfg)
			eventually(t, "the GPUNode exists", func() error { _, err := getGPUNode(c, name); return err })
			time.Sleep(200 * time.Millisecond) // past the first round
			asked := time.Now()
			askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 1, Step: v1alpha1.StepCaptureEvidence})
			var answered bool
			for time.Since(asked) < 3*time.Second && !answered {
				gn, err := getGPUNode(c, name)
				answered = err == nil && gn.Status.RemediationAnswer != nil && gn.Status.RemediationAnswer.ID == 1
				time.Sleep(20 * time.Millisecond)
			}
			switch {
			case !tt.noWatch && !answered:
				t.Fatal("no answer within 3 s with a one-hour interval: the watch did not wake the agent")
			case tt.noWatch && answered:
				t.Fatal("an agent with NoWatch answered before its interval: the test cannot tell watching from polling")
			}
			if answered {
				t.Logf("answered %s after the request", time.Since(asked).Round(time.Millisecond))
			}
		})
	}
}
