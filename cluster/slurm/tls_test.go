package slurm_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/cluster/slurm"
)

// selfSigned writes a throwaway self-signed certificate for 127.0.0.1 (its own CA) and its key.
func selfSigned(t *testing.T) cluster.TLSFiles {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpunotes test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	f := cluster.TLSFiles{Cert: filepath.Join(d, "cert.pem"), Key: filepath.Join(d, "key.pem"), CA: filepath.Join(d, "ca.pem")}
	for p, b := range map[string]*pem.Block{f.Cert: {Type: "CERTIFICATE", Bytes: der}, f.Key: {Type: "PRIVATE KEY", Bytes: kder},
		f.CA: {Type: "CERTIFICATE", Bytes: der}} {
		if err := os.WriteFile(p, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestTLSPassedToJobs checks that with Options.TLS the scheduler requires TLS (the cluster's
// own client connects over it) and the job script passes the files to cuda-worker.
func TestTLSPassedToJobs(t *testing.T) {
	fakeSLURM(t)
	files := selfSigned(t)
	c, err := slurm.New(slurm.Options{JobName: "gpunotes-tls", Binary: "/opt/gpunotes/bin/gpunotes", TLS: files})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.TLS() {
		t.Error("the cluster's client is not under TLS")
	}
	script := c.JobScript()
	want := " --tls-cert " + files.Cert + " --tls-key " + files.Key + " --tls-ca " + files.CA
	if !strings.Contains(script, want) {
		t.Errorf("job script lacks %q:\n%s", want, script)
	}
	if _, err := cluster.Connect(c.Address(), c.Token()); err == nil || !strings.Contains(err.Error(), "requires TLS") {
		t.Errorf("plaintext client of a TLS SLURM cluster: %v", err)
	}
	if !strings.Contains(c.HTML(), "TLS") {
		t.Errorf("HTML does not show TLS:\n%s", c.HTML())
	}
}
