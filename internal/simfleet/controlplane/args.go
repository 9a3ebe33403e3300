package controlplane

import (
	"net"
	"net/url"
	"path/filepath"
	"strconv"
)

// Host is the loopback address both processes listen on.
const Host = "127.0.0.1"

// Files in the control plane's folder.
const (
	etcdDataDir     = "etcd"
	pkiDir          = "pki"
	caCertFile      = "ca.crt"
	servingCertFile = "apiserver.crt"
	servingKeyFile  = "apiserver.key"
	saPublicFile    = "sa.pub"
	saKeyFile       = "sa.key"
)

// ports are the three loopback ports the control plane listens on.
type ports struct {
	etcdClient, etcdPeer, apiServer int
}

// etcdURL is etcd's client URL (the API server's --etcd-servers).
func (p ports) etcdURL() string { return hostURL("http", p.etcdClient) }

// apiServerURL is the API server's URL.
func (p ports) apiServerURL() string { return hostURL("https", p.apiServer) }

func hostURL(scheme string, port int) string {
	return (&url.URL{Scheme: scheme, Host: net.JoinHostPort(Host, strconv.Itoa(port))}).String()
}

// etcdArgs are etcd's flags: one member on loopback with its data in dir. noFsync adds
// --unsafe-no-fsync (etcd 3.5 and later): a simulated fleet's state is thrown away
// when it stops, and fsync on a busy disk slows every write.
func etcdArgs(dir string, p ports, noFsync bool) []string {
	args := []string{
		"--data-dir=" + filepath.Join(dir, etcdDataDir),
		"--listen-client-urls=" + p.etcdURL(),
		"--advertise-client-urls=" + p.etcdURL(),
		"--listen-peer-urls=" + hostURL("http", p.etcdPeer),
		"--initial-advertise-peer-urls=" + hostURL("http", p.etcdPeer),
		"--initial-cluster=default=" + hostURL("http", p.etcdPeer),
		"--name=default",
	}
	if noFsync {
		args = append(args, "--unsafe-no-fsync=true")
	}
	return args
}

// apiServerArgs are kube-apiserver's flags: TLS on loopback with the folder's
// certificates, client certificates signed by the folder's CA, RBAC, service-account
// tokens signed by the folder's key, and etcd at p. The ServiceAccount admission plugin
// is off: no controller-manager creates the default ServiceAccounts it would wait for. It
// advertises loopback, which the endpoint reconciler refuses, so that is off (nothing
// reads the kubernetes Service's endpoints here): a machine without a default route
// has no other address to advertise.
func apiServerArgs(dir string, p ports) []string {
	pki := filepath.Join(dir, pkiDir)
	return []string{
		"--etcd-servers=" + p.etcdURL(),
		"--bind-address=" + Host,
		"--advertise-address=" + Host,
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(p.apiServer),
		"--cert-dir=" + pki,
		"--tls-cert-file=" + filepath.Join(pki, servingCertFile),
		"--tls-private-key-file=" + filepath.Join(pki, servingKeyFile),
		"--client-ca-file=" + filepath.Join(pki, caCertFile),
		"--authorization-mode=RBAC",
		"--service-account-issuer=" + p.apiServerURL(),
		"--service-account-key-file=" + filepath.Join(pki, saPublicFile),
		"--service-account-signing-key-file=" + filepath.Join(pki, saKeyFile),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--disable-admission-plugins=ServiceAccount",
	}
}
