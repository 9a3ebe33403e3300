// Package cluster_test is the real-cluster test tier: a real kubelet, containerd, runc, CNI
// bridge, scheduler and controller-manager on this machine (hack/cluster-up.sh, in a private
// mount and network namespace), the gpunode image built without a container engine
// (hack/image.sh), and the chart installed with helm exactly as docs/install.md tells a user.
// Every command a test runs goes through hack/cluster-exec.sh, as a user's kubectl would.
//
// The tier needs root and the binaries of hack/k8s-test-assets.sh and hack/cluster-assets.sh
// (hack/test.sh builds them and sets GPUNODE_CLUSTER_ASSETS). Without them the tests are
// skipped with the reason, except under CI=true, where they fail: in CI the cluster runs.
package cluster_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	namespace = "gpunode-system"
	nodeName  = "gpu-node-1"
	// testImage is the small image of the test pods (busybox from Debian's busybox-static).
	testImage = "localhost/gpunode-test/busybox:1"
)

// repoRoot is the repository's top folder (the tests run in test/cluster).
var repoRoot, _ = filepath.Abs("../..")

// env is the cluster every test of the package shares; err says why there is none.
var env struct {
	state string
	err   error
	skip  string
	// image is the gpunode image archive hack/image.sh built (removed after the tests).
	image string
}

func TestMain(m *testing.M) {
	env.skip, env.err = setUp()
	code := m.Run()
	if env.image != "" {
		_ = os.RemoveAll(filepath.Dir(env.image))
	}
	if env.state != "" {
		if code != 0 {
			keepLogs()
		}
		down := exec.Command("bash", filepath.Join(repoRoot, "hack/cluster-down.sh"))
		down.Env = append(os.Environ(), "CLUSTER_STATE="+env.state)
		if out, err := down.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "cluster-down.sh: %v\n%s", err, out)
			code = 1
		}
	}
	os.Exit(code)
}

// setUp builds the images and brings the cluster up. It returns a reason to skip when the
// tier is not built (and CI is not set), or the error that stops every test.
func setUp() (skip string, err error) {
	assets := os.Getenv("GPUNODE_CLUSTER_ASSETS")
	switch {
	case assets == "":
		skip = "GPUNODE_CLUSTER_ASSETS not set: bash hack/test.sh builds the real-cluster tier (hack/cluster-assets.sh) and runs it"
	case os.Geteuid() != 0:
		skip = "the real-cluster tier needs root (namespaces, mounts, cgroups)"
	}
	if skip != "" {
		if os.Getenv("CI") == "true" {
			return "", fmt.Errorf("CI=true and the real-cluster tier cannot run: %s", skip)
		}
		return skip, nil
	}
	work, err := os.MkdirTemp("", "gpunode-cluster-images-")
	if err != nil {
		return "", err
	}
	gpunodeTar, busyboxTar := filepath.Join(work, "gpunode.tar"), filepath.Join(work, "busybox.tar")
	env.image = gpunodeTar
	if out, err := script("hack/image.sh", nil, gpunodeTar); err != nil {
		return "", fmt.Errorf("building the gpunode image: %w\n%s", err, out)
	}
	if err := busyboxImage(work, busyboxTar); err != nil {
		return "", err
	}
	env.state = filepath.Join(os.TempDir(), fmt.Sprintf("gpunode-cluster-%d", os.Getpid()))
	upEnv := []string{"CLUSTER_STATE=" + env.state, "NODE_NAME=" + nodeName, "IMAGES=" + gpunodeTar + " " + busyboxTar}
	if out, err := script("hack/cluster-up.sh", upEnv); err != nil {
		return "", fmt.Errorf("bringing the cluster up: %w\n%s", err, out)
	}
	return "", nil
}

// busyboxImage is the test pods' image: Debian's static busybox as /bin/sh and friends.
func busyboxImage(work, out string) error {
	root := filepath.Join(work, "busybox-root")
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		return err
	}
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return fmt.Errorf("the test image needs Debian's busybox-static: %w", err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin/busybox"), bb, 0o755); err != nil {
		return err
	}
	for _, n := range []string{"sh", "ls", "cat", "env", "sleep", "test", "grep", "stat"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", n)); err != nil {
			return err
		}
	}
	if out, err := script("hack/oci-image.sh", nil, root, "/bin/sh", testImage, out); err != nil {
		return fmt.Errorf("building the test image: %w\n%s", err, out)
	}
	return nil
}

// script runs one of the repository's scripts with extra environment.
func script(name string, extraEnv []string, args ...string) (string, error) {
	cmd := exec.Command("bash", append([]string{filepath.Join(repoRoot, name)}, args...)...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), extraEnv...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// keepLogs copies the cluster's logs next to the test binary's output folder for a look
// after a failure (GPUNODE_CLUSTER_LOGS, default a temporary folder named in the output).
func keepLogs() {
	dst := os.Getenv("GPUNODE_CLUSTER_LOGS")
	if dst == "" {
		var err error
		if dst, err = os.MkdirTemp("", "gpunode-cluster-logs-"); err != nil {
			return
		}
	}
	_ = exec.Command("cp", "-r", filepath.Join(env.state, "logs"), filepath.Join(env.state, "var-log"), dst).Run()
	fmt.Fprintf(os.Stderr, "cluster logs kept in %s\n", dst)
}

// need skips or fails the test when the package has no cluster.
func need(t *testing.T) {
	t.Helper()
	if env.err != nil {
		t.Fatal(env.err)
	}
	if env.skip != "" {
		t.Skip(env.skip)
	}
}

// trimLines is s without its trailing newline, split in lines.
func trimLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
