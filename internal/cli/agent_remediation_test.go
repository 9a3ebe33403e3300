package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"
)

func TestTheAgentsHelpNamesItsRemediationAndPodFlagsWithTheirDefaults(t *testing.T) {
	execute(t, "agent", "--help").check(t, ExitOK, []string{
		"--pod-resources-socket string", `(default "/var/lib/kubelet/pod-resources/kubelet.sock")`,
		"--state-dir string", `(default "/var/lib/gpunode")`,
		"--reset-command strings", "--reboot-command strings", "nsenter", "--power-cycle-command strings",
	}, nil)
}

// A node without the kubelet's pod-resources socket (or an agent started before the
// kubelet) runs anyway: the pods are left out and the agent says so once, not per round.
func TestTheAgentRunsWithoutThePodResourcesSocketAndSaysSoOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	sock := filepath.Join(t.TempDir(), "kubelet.sock")
	var out, errOut bytes.Buffer
	code := Execute(ctx, []string{"agent", "--node-name", "n1", "--sim", "h100x8", "--interval", "100ms",
		"--kubeconfig", unreachableKubeconfig(t), "--state-dir", t.TempDir(), "--pod-resources-socket", sock}, &out, &errOut)
	r := result{code: code, stdout: out.String(), stderr: errOut.String()}
	r.check(t, ExitOK, nil, []string{"kubelet pod-resources socket absent: pod attribution paused", "socket=" + sock})
	if n := bytes.Count(errOut.Bytes(), []byte("pod-resources socket absent")); n != 1 {
		t.Errorf("the absent socket was logged %d times in 1.5 s, want once:\n%s", n, r.stderr)
	}
}
