package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/simhost"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/platform"
	"github.com/gpunode/gpunode/internal/testenv"
)

// driverAgent is an agent on simulated GPUs whose driver is loaded by a version file under
// a host root, as the stand-in driver container loads it; the backend waits for it.
func driverAgent(t *testing.T, c client.Client, node string) (versionFile string, p *platform.Platform) {
	t.Helper()
	root := t.TempDir()
	p, err := platform.Open(platform.Options{Sim: "h100x8", HostRoot: root, SimDriverFile: "/run/nvidia/driver-version", WaitForDriver: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.RunDriver(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	cfg, _ := simConfig(t, c, node)
	cfg.Backend = p.Backend
	cfg.Kernel = nil
	cfg.Host = func(devs []gpu.Device) (*host.Reader, error) { return simhost.Reader(devs, nil) }
	cfg.OnPause = p.Driver().Pause
	start(t, cfg)
	return filepath.Join(root, "run", "nvidia", "driver-version"), p
}

func stackOf(c client.Client, name string) (*v1alpha1.StackStatus, error) {
	gn, err := getGPUNode(c, name)
	if err != nil {
		return nil, err
	}
	if gn.Status.Stack == nil {
		return nil, fmt.Errorf("no status.stack yet")
	}
	return gn.Status.Stack, nil
}

func TestTheNodeStaysHeldUntilTheDriverIsLoadedAndTheAgentGoesOnThen(t *testing.T) {
	_, c := testenv.Start(t)
	name := newNode(t, c, nil)
	file, _ := driverAgent(t, c, name)

	eventually(t, "status.stack says the driver is not loaded", func() error {
		st, err := stackOf(c, name)
		if err != nil {
			return err
		}
		if st.Driver.Ready || !strings.Contains(st.Driver.Message, "not loaded") {
			return fmt.Errorf("driver %+v", st.Driver)
		}
		return nil
	})
	holds, err := nodeops.Ops{Client: c}.Get(context.Background(), name)
	if err != nil || len(holds) != 1 || holds[0].Owner != v1alpha1.HoldOwnerAcceptance {
		t.Fatalf("holds %+v (%v), want the acceptance hold while the driver is not loaded", holds, err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("570.172.08\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the driver is ready at the file's version and the GPUs are published", func() error {
		gn, err := getGPUNode(c, name)
		if err != nil {
			return err
		}
		st := gn.Status.Stack
		if st == nil || !st.Driver.Ready || st.Driver.Version != "570.172.08" || gn.Status.Versions.Driver != "570.172.08" || gn.Status.GPUCount != 8 {
			return fmt.Errorf("stack %+v, versions %+v, %d GPUs", st, gn.Status.Versions, gn.Status.GPUCount)
		}
		if !st.Toolkit.Ready {
			return fmt.Errorf("toolkit %+v", st.Toolkit)
		}
		return nil
	})
	holds, err = nodeops.Ops{Client: c}.Get(context.Background(), name)
	if err != nil || len(holds) != 1 {
		t.Fatalf("holds %+v (%v): the agent alone never releases its acceptance hold", holds, err)
	}
}

func TestTheGPUOperatorsPauseLabelReleasesTheGPUsUntilItGoes(t *testing.T) {
	_, c := testenv.Start(t)
	name := newNode(t, c, map[string]string{"nvidia.com/gpu.deploy.driver": "true"})
	file, p := driverAgent(t, c, name)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("580.95.05\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the driver is ready", func() error {
		st, err := stackOf(c, name)
		if err != nil {
			return err
		}
		if !st.Driver.Ready {
			return fmt.Errorf("driver %+v", st.Driver)
		}
		return nil
	})
	setLabel := func(v string) { // as kubectl label --overwrite does: a merge patch
		t.Helper()
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{"nvidia.com/gpu.deploy.driver":%q}}}`, v)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Patch(context.Background(), n, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	setLabel("paused-for-driver-upgrade")
	const label = "nvidia.com/gpu.deploy.driver=paused-for-driver-upgrade"
	eventually(t, "status.stack.paused names the label and the driver is released", func() error {
		st, err := stackOf(c, name)
		if err != nil {
			return err
		}
		if st.Paused != label || st.Driver.Ready || !strings.Contains(st.Driver.Message, label) {
			return fmt.Errorf("stack %+v", st)
		}
		return nil
	})
	if s := p.Driver().State(); s.Loaded || s.Paused != label {
		t.Errorf("driver state %+v while paused, want released", s)
	}
	if _, err := p.Backend.Snapshot(context.Background()); err == nil {
		t.Error("the GPUs were read while paused")
	}
	setLabel("true")
	eventually(t, "the agent opens the GPUs again once the label is back", func() error {
		st, err := stackOf(c, name)
		if err != nil {
			return err
		}
		if st.Paused != "" || !st.Driver.Ready || st.Driver.Version != "580.95.05" {
			return fmt.Errorf("stack %+v", st)
		}
		return nil
	})
}
