package slurm_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/cluster/slurm"
	"github.com/gpunotes/gpunotes/internal/testenv"
)

// selfSigned writes a throwaway self-signed certificate for 127.0.0.1 (its own CA) and its key.
func selfSigned(t *testing.T) cluster.TLSFiles {
	t.Helper()
	d := t.TempDir()
	testenv.WriteSelfSigned(t, d, "cert.pem", "key.pem", "ca.pem")
	return cluster.TLSFiles{Cert: filepath.Join(d, "cert.pem"), Key: filepath.Join(d, "key.pem"), CA: filepath.Join(d, "ca.pem")}
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
