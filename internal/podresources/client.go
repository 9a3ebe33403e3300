// Package podresources attributes GPUs to the pods that hold them, through the kubelet's
// pod-resources API (v1) on its local unix socket. A Cache refreshes the attribution in
// the background so that a metrics scrape only reads a map and never waits on the kubelet.
package podresources

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

const (
	// DefaultSocket is where the kubelet serves the pod-resources API.
	DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"
	// MaxMessageSize bounds a response, as the kubelet's own client does (16 MiB); gRPC's
	// default of 4 MiB is too small for a node with many pods.
	MaxMessageSize = 16 << 20
	// DefaultTimeout bounds one call when the caller gives no timeout.
	DefaultTimeout = 5 * time.Second
)

// Client calls the kubelet's PodResourcesLister (v1) over its unix socket. It connects
// lazily: NewClient does no I/O, the first call dials. Safe for concurrent use.
type Client struct {
	socket  string
	timeout time.Duration
	conn    *grpc.ClientConn
	api     podresourcesv1.PodResourcesListerClient
}

// NewClient returns a client of the pod-resources socket at path socket (made absolute),
// whose calls each time out after timeout (DefaultTimeout when zero or negative). The
// connection is local and unauthenticated, as the kubelet serves it.
func NewClient(socket string, timeout time.Duration) (*Client, error) {
	abs, err := filepath.Abs(socket)
	if err != nil {
		return nil, fmt.Errorf("pod-resources socket %q: %w", socket, err)
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	target := (&url.URL{Scheme: "unix", Path: abs}).String() // unix:///abs/path, escaped
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize)),
	)
	if err != nil {
		return nil, fmt.Errorf("pod-resources client for %s: %w", abs, err)
	}
	return &Client{socket: abs, timeout: timeout, conn: conn, api: podresourcesv1.NewPodResourcesListerClient(conn)}, nil
}

// Socket is the absolute path the client calls.
func (c *Client) Socket() string { return c.socket }

// List returns the resources of every pod the kubelet has admitted.
func (c *Client) List(ctx context.Context) ([]*podresourcesv1.PodResources, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.api.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("list pod resources from %s: %w", c.socket, err)
	}
	return resp.GetPodResources(), nil
}

// Get returns the resources of one pod. The kubelet serves it only with its
// KubeletPodResourcesGet feature gate on; otherwise the error carries codes.Unimplemented
// or the kubelet's refusal.
func (c *Client) Get(ctx context.Context, namespace, name string) (*podresourcesv1.PodResources, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.api.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodNamespace: namespace, PodName: name})
	if err != nil {
		return nil, fmt.Errorf("get pod resources of %s/%s from %s: %w", namespace, name, c.socket, err)
	}
	return resp.GetPodResources(), nil
}

// Close releases the connection.
func (c *Client) Close() error {
	if err := c.conn.Close(); err != nil {
		return fmt.Errorf("close pod-resources client for %s: %w", c.socket, err)
	}
	return nil
}
