package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/simhost"
)

func TestPausedBy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"a node without GPU Operator labels is not paused", map[string]string{"a": "b"}, ""},
		{"deploy labels set to true do not pause", map[string]string{"nvidia.com/gpu.deploy.driver": "true", "nvidia.com/gpu.deploy.device-plugin": "true"}, ""},
		{"a deploy label set to false by an administrator does not pause", map[string]string{"nvidia.com/gpu.deploy.dcgm": "false"}, ""},
		{"the driver manager's upgrade pause pauses, named with its value",
			map[string]string{"nvidia.com/gpu.deploy.device-plugin": "paused-for-driver-upgrade", "nvidia.com/gpu.deploy.driver": "true"},
			"nvidia.com/gpu.deploy.device-plugin=paused-for-driver-upgrade"},
		{"the MIG manager's pause pauses", map[string]string{"nvidia.com/gpu.deploy.dcgm-exporter": "paused-for-mig-change"}, "nvidia.com/gpu.deploy.dcgm-exporter=paused-for-mig-change"},
		{"of several paused labels the first by key is named",
			map[string]string{"nvidia.com/gpu.deploy.gpu-feature-discovery": "paused-for-mig-change", "nvidia.com/gpu.deploy.dcgm": "paused-for-mig-change"},
			"nvidia.com/gpu.deploy.dcgm=paused-for-mig-change"},
		{"a paused value under another prefix does not pause", map[string]string{"nvidia.com/mig.config.state": "paused-for-mig-change"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pausedBy(tc.labels); got != tc.want {
				t.Errorf("pausedBy = %q, want %q", got, tc.want)
			}
		})
	}
}

// simFacts are a simulated H100 node's facts, on which the toolkit is ready.
func simFacts(t *testing.T) *accept.Facts {
	t.Helper()
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, err := simhost.Reader(snap.Devices, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.Read(context.Background(), host.Options{}, host.GPURefs(snap.Devices))
	if err != nil {
		t.Fatal(err)
	}
	return &accept.Facts{Node: "n", GPU: snap, Host: h}
}

func TestStackStatus(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	readyBefore := &v1alpha1.StackStatus{
		Driver:  v1alpha1.OperandReadiness{Ready: true, Since: metav1.NewTime(t0)},
		Toolkit: v1alpha1.OperandReadiness{Ready: true, Since: metav1.NewTime(t0)},
	}
	for _, tc := range []struct {
		name          string
		mutate        func(f *accept.Facts)
		paused        string
		prev          *v1alpha1.StackStatus
		driver        bool
		driverSays    string
		toolkit       bool
		driverSince   time.Time
		toolkitSince  time.Time
		versionWanted string
	}{
		{"a node whose GPUs answer has a ready driver at NVML's version and a ready toolkit", func(*accept.Facts) {}, "", nil,
			true, "580.95.05", true, now, now, "580.95.05"},
		{"a driver that is not loaded is not ready and says why", func(f *accept.Facts) {
			f.GPU, f.GPUErr = nil, gpu.ErrDriverNotFound
		}, "", readyBefore, false, "NVIDIA driver not found", true, now, t0, ""},
		{"a paused node's driver is not ready, naming the label", func(f *accept.Facts) { f.GPU, f.GPUErr = nil, errors.New("released") },
			"nvidia.com/gpu.deploy.driver=paused-for-driver-upgrade", readyBefore, false, "paused by nvidia.com/gpu.deploy.driver=paused-for-driver-upgrade", true, now, t0, ""},
		{"a containerd without the nvidia runtime is a toolkit that is not ready", func(f *accept.Facts) {
			c := *f.Host.Containerd.Config
			c.NvidiaRuntime, c.NvidiaDefault, c.EnableCDI = false, false, nil
			f.Host.Containerd.Config = &c
		}, "", readyBefore, true, "580.95.05", false, t0, now, "580.95.05"},
		{"readiness that does not change keeps its time", func(*accept.Facts) {}, "", readyBefore, true, "580.95.05", true, t0, t0, "580.95.05"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := simFacts(t)
			tc.mutate(f)
			st := stackStatus(f, tc.paused, tc.prev, now)
			if st.Driver.Ready != tc.driver || !strings.Contains(st.Driver.Message, tc.driverSays) || st.Driver.Version != tc.versionWanted {
				t.Errorf("driver %+v, want ready %v, version %q, saying %q", st.Driver, tc.driver, tc.versionWanted, tc.driverSays)
			}
			if st.Toolkit.Ready != tc.toolkit || st.Toolkit.Message == "" {
				t.Errorf("toolkit %+v, want ready %v with a message", st.Toolkit, tc.toolkit)
			}
			if !st.Driver.Since.Time.Equal(tc.driverSince) || !st.Toolkit.Since.Time.Equal(tc.toolkitSince) {
				t.Errorf("since: driver %v toolkit %v, want %v and %v", st.Driver.Since, st.Toolkit.Since, tc.driverSince, tc.toolkitSince)
			}
			if st.Paused != tc.paused {
				t.Errorf("paused %q, want %q", st.Paused, tc.paused)
			}
		})
	}
}
