package controlplane

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/util/keyutil"
)

func parseCert(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("not a PEM certificate: %q", b)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewPKI(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	p, err := newPKI(Host, now)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(parseCert(t, p.caCert))
	for _, tc := range []struct {
		name  string
		cert  []byte
		key   []byte
		usage x509.ExtKeyUsage
		check func(t *testing.T, c *x509.Certificate)
	}{
		{"The serving certificate is signed by the CA and names 127.0.0.1 and localhost.", p.servingCert, p.servingKey, x509.ExtKeyUsageServerAuth,
			func(t *testing.T, c *x509.Certificate) {
				if err := c.VerifyHostname(Host); err != nil {
					t.Error(err)
				}
				if err := c.VerifyHostname("localhost"); err != nil {
					t.Error(err)
				}
			}},
		{"The admin client certificate is signed by the CA and is in group system:masters.", p.adminCert, p.adminKey, x509.ExtKeyUsageClientAuth,
			func(t *testing.T, c *x509.Certificate) {
				if c.Subject.CommonName != AdminUser || !slices.Equal(c.Subject.Organization, []string{AdminGroup}) {
					t.Errorf("subject %v; want CN=%s O=%s", c.Subject, AdminUser, AdminGroup)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tls.X509KeyPair(tc.cert, tc.key); err != nil {
				t.Fatalf("certificate and key do not match: %v", err)
			}
			c := parseCert(t, tc.cert)
			opts := x509.VerifyOptions{Roots: roots, CurrentTime: now.Add(time.Hour), KeyUsages: []x509.ExtKeyUsage{tc.usage}}
			if _, err := c.Verify(opts); err != nil {
				t.Fatalf("not valid for %v from the CA an hour after issue: %v", tc.usage, err)
			}
			if !c.NotAfter.After(now.Add(7 * 24 * time.Hour)) {
				t.Errorf("valid until %s only; a fleet may run for a week", c.NotAfter)
			}
			tc.check(t, c)
		})
	}
	t.Run("The service-account keys are a PKCS #8 private key and its PKIX public key, as kube-apiserver reads them.", func(t *testing.T) {
		priv, err := keyutil.ParsePrivateKeyPEM(p.saKey)
		if err != nil {
			t.Fatal(err)
		}
		pubs, err := keyutil.ParsePublicKeysPEM(p.saPublic)
		if err != nil || len(pubs) != 1 {
			t.Fatalf("public keys %v, %v; want one", pubs, err)
		}
		signer, ok := priv.(crypto.Signer)
		if !ok {
			t.Fatalf("the private key is a %T; want a signer", priv)
		}
		if pub, ok := pubs[0].(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(signer.Public()) {
			t.Error("the public key is not the private key's")
		}
	})
}

func TestNewPKIRefusesAHostThatIsNotAnIP(t *testing.T) {
	if _, err := newPKI("localhost", time.Now()); err == nil {
		t.Fatal("newPKI(localhost) succeeded; want an error: the serving address is an IP")
	}
}
