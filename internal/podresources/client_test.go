package podresources

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

func TestClientListsAndGetsPods(t *testing.T) {
	socket := socketPath(t)
	f := &fakeKubelet{}
	f.set(pod("ml", "train-0", ctr("main", dev("nvidia.com/gpu", "GPU-a"))), pod("ml", "idle"))
	serve(t, socket, f)
	c, err := NewClient(socket, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()

	pods, err := c.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(pods) != 2 || pods[0].GetName() != "train-0" || pods[0].GetContainers()[0].GetDevices()[0].GetDeviceIds()[0] != "GPU-a" {
		t.Errorf("List = %v, want train-0 holding GPU-a and idle", pods)
	}

	p, err := c.Get(t.Context(), "ml", "train-0")
	if err != nil || p.GetName() != "train-0" {
		t.Errorf("Get(ml, train-0) = %v, %v; want the pod", p, err)
	}
	_, err = c.Get(t.Context(), "ml", "gone")
	if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "ml/gone") {
		t.Errorf("Get(ml, gone) error = %v, want NotFound naming ml/gone", err)
	}
}

func TestClientAcceptsResponsesAboveGRPCDefaultLimit(t *testing.T) {
	socket := socketPath(t)
	f := &fakeKubelet{}
	// About 6 MiB: 1,000 pods of 100 devices of 60 bytes, beyond gRPC's 4 MiB default.
	id := strings.Repeat("x", 60)
	var pods []*podresourcesv1.PodResources
	for i := range 1000 {
		ids := make([]string, 100)
		for j := range ids {
			ids[j] = id
		}
		pods = append(pods, pod("ns", fmt.Sprintf("p%d", i), ctr("c", dev("example.com/dev", ids...))))
	}
	f.set(pods...)
	serve(t, socket, f)
	c, err := NewClient(socket, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	got, err := c.List(t.Context())
	if err != nil {
		t.Fatalf("List of a ~6 MiB response: %v", err)
	}
	if len(got) != len(pods) {
		t.Errorf("List returned %d pods, want %d", len(got), len(pods))
	}
}

func TestClientTimesOutASlowKubelet(t *testing.T) {
	socket := socketPath(t)
	f := &fakeKubelet{delay: 10 * time.Second}
	serve(t, socket, f)
	c, err := NewClient(socket, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	start := time.Now()
	_, err = c.List(context.Background())
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("List error = %v, want DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("List took %v with a 100ms timeout", took)
	}
}

func TestClientReportsAnAbsentSocketAsUnavailable(t *testing.T) {
	socket := socketPath(t)
	c, err := NewClient(socket, time.Second)
	if err != nil {
		t.Fatalf("NewClient must not dial: %v", err)
	}
	defer func() { _ = c.Close() }()
	_, err = c.List(t.Context())
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), socket) {
		t.Errorf("List error = %v, want Unavailable naming %s", err, socket)
	}
}
