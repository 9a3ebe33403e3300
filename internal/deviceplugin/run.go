package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// KubeletSocket is the kubelet's registration socket name inside the device-plugins folder.
const KubeletSocket = "kubelet.sock"

// registerTimeout bounds one Register call.
const registerTimeout = 10 * time.Second

// SocketPath is the plugin's socket.
func (p *Plugin) SocketPath() string { return filepath.Join(p.cfg.Dir, p.socket) }

func (p *Plugin) kubeletPath() string { return filepath.Join(p.cfg.Dir, KubeletSocket) }

// Run serves the plugin's socket and registers with the kubelet until ctx ends. Every
// PollInterval it checks the kubelet's socket: when the kubelet restarted (its socket is
// a new file) or the plugin's own socket was removed, it serves a new socket and
// registers again. A failed registration is retried at the next check. Run returns nil
// when ctx ends, or an error when the socket cannot be served at all.
func (p *Plugin) Run(ctx context.Context) error {
	go p.relay(ctx)
	srv, err := p.serve()
	if err != nil {
		return err
	}
	defer func() {
		srv.Stop()
		_ = os.Remove(p.SocketPath())
	}()
	var registered fs.FileInfo // the kubelet socket registered with, nil when not registered
	tick := time.NewTicker(p.cfg.PollInterval)
	defer tick.Stop()
	for {
		kubelet, kerr := os.Stat(p.kubeletPath())
		_, ownErr := os.Stat(p.SocketPath())
		switch {
		case kerr != nil:
			if registered != nil {
				p.cfg.Log.Info("device plugin: kubelet socket gone; waiting for the kubelet", "path", p.kubeletPath())
			}
			registered = nil
		case registered == nil || !os.SameFile(registered, kubelet) || ownErr != nil:
			if registered != nil || ownErr != nil {
				p.cfg.Log.Info("device plugin: kubelet restarted; serving and registering again")
				srv.Stop()
				if srv, err = p.serve(); err != nil {
					return err
				}
			}
			registered = nil
			if err := p.register(ctx); err != nil {
				p.cfg.Log.Warn("device plugin: registration failed; retrying", "err", err)
			} else {
				registered = kubelet
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// serve listens on a fresh plugin socket and serves the device-plugin API on it.
func (p *Plugin) serve() (*grpc.Server, error) {
	path := p.SocketPath()
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("device plugin: remove stale socket %s: %w", path, err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("device plugin: listen on %s: %w", path, err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() {
		if err := srv.Serve(lis); err != nil {
			p.cfg.Log.Warn("device plugin: server stopped", "path", path, "err", err)
		}
	}()
	return srv, nil
}

// register tells the kubelet about the plugin's socket and resource.
func (p *Plugin) register(ctx context.Context) error {
	path := p.kubeletPath()
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("device plugin: dial kubelet %s: %w", path, err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     p.socket,
		ResourceName: p.resource.Name,
		Options:      options(),
	}, grpc.WaitForReady(true))
	if err != nil {
		return fmt.Errorf("device plugin: register %s with kubelet %s: %w", p.resource.Name, path, err)
	}
	p.cfg.Log.Info("device plugin: registered", "resource", p.resource.Name, "socket", p.SocketPath())
	return nil
}

// RunAll runs every plugin until ctx ends; it returns when all have returned, with their
// errors joined. One plugin that cannot serve its socket stops the others.
func RunAll(ctx context.Context, plugins []*Plugin) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(plugins))
	for _, p := range plugins {
		go func() {
			err := p.Run(ctx)
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	var all []error
	for range plugins {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}
