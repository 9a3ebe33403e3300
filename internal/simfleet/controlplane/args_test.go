package controlplane

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestEtcdArgs(t *testing.T) {
	p := ports{etcdClient: 2001, etcdPeer: 2002, apiServer: 2003}
	for _, tc := range []struct {
		name    string
		noFsync bool
		want    []string
		notWant []string
	}{
		{"etcd listens for clients and peers on loopback with its data in the folder.", false,
			[]string{"--data-dir=/cp/etcd", "--listen-client-urls=http://127.0.0.1:2001", "--advertise-client-urls=http://127.0.0.1:2001",
				"--listen-peer-urls=http://127.0.0.1:2002", "--initial-cluster=default=http://127.0.0.1:2002"},
			[]string{"--unsafe-no-fsync=true"}},
		{"An etcd that knows --unsafe-no-fsync gets it.", true, []string{"--unsafe-no-fsync=true"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := etcdArgs("/cp", p, tc.noFsync)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("etcd args %v lack %s", got, w)
				}
			}
			for _, w := range tc.notWant {
				if slices.Contains(got, w) {
					t.Errorf("etcd args %v have %s", got, w)
				}
			}
		})
	}
}

func TestAPIServerArgs(t *testing.T) {
	got := apiServerArgs("/cp", ports{etcdClient: 2001, etcdPeer: 2002, apiServer: 2003})
	pki := filepath.Join("/cp", pkiDir)
	for _, tc := range []struct {
		name string
		want string
	}{
		{"The API server stores in the fleet's etcd.", "--etcd-servers=http://127.0.0.1:2001"},
		{"The API server serves TLS on its loopback port.", "--secure-port=2003"},
		{"The API server binds loopback only.", "--bind-address=127.0.0.1"},
		{"The API server advertises loopback, so that it starts on a machine without a default route.", "--advertise-address=127.0.0.1"},
		{"The endpoint reconciler, which refuses a loopback address, is off.", "--endpoint-reconciler-type=none"},
		{"The API server serves the folder's certificate.", "--tls-cert-file=" + pki + "/apiserver.crt"},
		{"The API server trusts the folder's CA for client certificates.", "--client-ca-file=" + pki + "/ca.crt"},
		{"The API server authorizes by RBAC (the admin is in system:masters).", "--authorization-mode=RBAC"},
		{"The API server verifies service-account tokens with the folder's public key.", "--service-account-key-file=" + pki + "/sa.pub"},
		{"The API server signs service-account tokens with the folder's key.", "--service-account-signing-key-file=" + pki + "/sa.key"},
		{"The API server's service-account issuer is its own URL.", "--service-account-issuer=https://127.0.0.1:2003"},
		{"The ServiceAccount admission plugin is off: no controller-manager makes default ServiceAccounts.", "--disable-admission-plugins=ServiceAccount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Contains(got, tc.want) {
				t.Errorf("kube-apiserver args lack %s:\n%s", tc.want, strings.Join(got, "\n"))
			}
		})
	}
}

func TestFreePortsAreThreeDistinctPorts(t *testing.T) {
	p, err := freePorts()
	if err != nil {
		t.Fatal(err)
	}
	all := []int{p.etcdClient, p.etcdPeer, p.apiServer}
	for _, n := range all {
		if n <= 0 || n > 65535 {
			t.Errorf("port %d out of range in %v", n, all)
		}
	}
	slices.Sort(all)
	if len(slices.Compact(all)) != 3 {
		t.Errorf("ports %+v are not distinct", p)
	}
}
