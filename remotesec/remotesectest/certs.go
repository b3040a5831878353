// Package remotesectest makes throw-away certificate authorities and member certificates for tests
// of mutual TLS between fleet members. Keys are ECDSA P-256; nothing here is for production.
package remotesectest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"
)

// CA is a test certificate authority.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CAFile is the CA certificate in PEM, for --client-ca-file.
	CAFile string
	dir    string
}

// Files are a member's PEM files, for --tls-cert-file and --tls-private-key-file.
type Files struct {
	Cert, Key, CA string
}

// NewCA creates a CA whose files live in t.TempDir().
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("ca key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("ca cert: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("ca cert: %v", err)
	}
	dir := t.TempDir()
	ca := &CA{cert: cert, key: key, dir: dir, CAFile: filepath.Join(dir, name+"-ca.pem")}
	writePEM(t, ca.CAFile, "CERTIFICATE", der)
	return ca
}

// Issue signs a member certificate (serverAuth and clientAuth) for the given IPs and DNS names.
func (ca *CA) Issue(t testing.TB, name string, hosts ...string) Files {
	t.Helper()
	return ca.issue(t, name, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, hosts...)
}

// IssueServerOnly signs a certificate that may only serve (no clientAuth), a common mistake.
func (ca *CA) IssueServerOnly(t testing.TB, name string, hosts ...string) Files {
	t.Helper()
	return ca.issue(t, name, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, hosts...)
}

func (ca *CA) issue(t testing.TB, name string, usage []x509.ExtKeyUsage, hosts ...string) Files {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("key: %v", err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("cert: %v", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("key: %v", err)
	}
	f := Files{Cert: filepath.Join(ca.dir, name+".pem"), Key: filepath.Join(ca.dir, name+"-key.pem"), CA: ca.CAFile}
	writePEM(t, f.Cert, "CERTIFICATE", der)
	writePEM(t, f.Key, "PRIVATE KEY", keyDER)
	return f
}

// ClientCreds are gRPC transport credentials presenting this certificate and trusting f.CA, as a
// member dialing another would (TLS 1.3).
func (f Files) ClientCreds(t testing.TB) credentials.TransportCredentials {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatalf("load %s: %v", f.Cert, err)
	}
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatalf("read %s: %v", f.CA, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s: no certificate", f.CA)
	}
	return credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS13})
}

// Flags returns the three TLS flags for a command line.
func (f Files) Flags() []string {
	return []string{"--tls-cert-file", f.Cert, "--tls-private-key-file", f.Key, "--client-ca-file", f.CA}
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}
