package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// certValidity is how long the generated certificates are valid: a fleet runs for hours
// or days, not for a year.
const certValidity = 30 * 24 * time.Hour

// AdminUser and AdminGroup are the client certificate's subject: system:masters may do
// anything, whatever RBAC says.
const (
	AdminUser  = "gpunode-admin"
	AdminGroup = "system:masters"
)

// pki is the control plane's key material, PEM-encoded.
type pki struct {
	// caCert signs the serving certificate and the admin's client certificate; the API
	// server trusts it for client certificates (--client-ca-file).
	caCert []byte
	// servingCert and servingKey are the API server's TLS certificate and key.
	servingCert, servingKey []byte
	// adminCert and adminKey are the admin user's client certificate and key.
	adminCert, adminKey []byte
	// saPublic and saKey verify and sign service-account tokens.
	saPublic, saKey []byte
}

// newPKI generates a CA, a serving certificate for host (an IP) and localhost, an admin
// client certificate and a service-account key, valid from now.
func newPKI(host string, now time.Time) (*pki, error) {
	ip := net.ParseIP(host)
	if ip == nil {
		return nil, fmt.Errorf("serving certificate for %q: not an IP address", host)
	}
	caKey, err := newKey()
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "gpunode-controlplane-ca"},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := sign(caTmpl, caTmpl, caKey.Public(), caKey, now)
	if err != nil {
		return nil, fmt.Errorf("creating the control plane's CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parsing the control plane's CA: %w", err)
	}
	p := &pki{caCert: pemBlock("CERTIFICATE", caDER)}
	if p.servingCert, p.servingKey, err = issue(ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{ip},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, now); err != nil {
		return nil, fmt.Errorf("creating the API server's serving certificate: %w", err)
	}
	if p.adminCert, p.adminKey, err = issue(ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: AdminUser, Organization: []string{AdminGroup}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, now); err != nil {
		return nil, fmt.Errorf("creating the admin client certificate: %w", err)
	}
	saKey, err := newKey()
	if err != nil {
		return nil, err
	}
	if p.saKey, err = privatePEM(saKey); err != nil {
		return nil, fmt.Errorf("encoding the service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, fmt.Errorf("encoding the service-account public key: %w", err)
	}
	p.saPublic = pemBlock("PUBLIC KEY", pub)
	return p, nil
}

// issue signs tmpl with the CA for a new key and returns the certificate and the key.
func issue(ca *x509.Certificate, caKey crypto.Signer, tmpl *x509.Certificate, now time.Time) (cert, key []byte, err error) {
	k, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	der, err := sign(tmpl, ca, k.Public(), caKey, now)
	if err != nil {
		return nil, nil, err
	}
	key, err = privatePEM(k)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), key, nil
}

// sign gives tmpl a random serial number and a validity from a minute before now to
// certValidity after it, and signs it with by.
func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, by crypto.Signer, now time.Time) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, fmt.Errorf("drawing a serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-time.Minute).UTC()
	tmpl.NotAfter = now.Add(certValidity).UTC()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, by)
	if err != nil {
		return nil, fmt.Errorf("signing the certificate of %q: %w", tmpl.Subject.CommonName, err)
	}
	return der, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating an ECDSA P-256 key: %w", err)
	}
	return k, nil
}

func privatePEM(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("encoding a private key as PKCS #8: %w", err)
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
