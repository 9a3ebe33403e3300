package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// controllerBinary is a built gpunode binary to run the controller as its own process, so
// its memory can be measured apart from the agents (GPUNODE_BIN; empty: in-process).
func controllerBinary() string { return os.Getenv("GPUNODE_BIN") }

// startControllerProcess runs `gpunode controller` against the test API server and returns
// a function that reads its memory (VmRSS and VmHWM in KiB) before the test stops it.
func startControllerProcess(t *testing.T, cfg *rest.Config) (memory func() (rss, hwm int)) {
	t.Helper()
	path := kubeconfigFor(t, cfg)
	cmd := exec.Command(controllerBinary(), "controller", "--kubeconfig", path, "--leader-elect=false",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	return func() (int, int) {
		f, err := os.Open(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "status"))
		if err != nil {
			return 0, 0
		}
		defer func() { _ = f.Close() }()
		var rss, hwm int
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) >= 2 && fields[0] == "VmRSS:" {
				rss = atoi(fields[1])
			}
			if len(fields) >= 2 && fields[0] == "VmHWM:" {
				hwm = atoi(fields[1])
			}
		}
		return rss, hwm
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
