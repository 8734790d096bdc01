package cluster_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// testCA is a throwaway certificate authority writing PEM files into a test's temp dir.
type testCA struct {
	t    testing.TB
	dir  string
	name string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{t: t, dir: t.TempDir(), name: name, cert: cert, key: key}
	ca.file = ca.write(name+"-ca.pem", "CERTIFICATE", der)
	return ca
}

func (ca *testCA) write(name, typ string, der []byte) string {
	p := filepath.Join(ca.dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		ca.t.Fatal(err)
	}
	return p
}

// issue makes a certificate for server and client use, valid for hosts (IPs or DNS names)
// from notBefore to notAfter, and returns the files with this CA as CA.
func (ca *testCA) issue(cn string, hosts []string, notBefore, notAfter time.Time) cluster.TLSFiles {
	ca.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		ca.t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	return cluster.TLSFiles{Cert: ca.write(cn+".pem", "CERTIFICATE", der), Key: ca.write(cn+"-key.pem", "PRIVATE KEY", kder), CA: ca.file}
}

func (ca *testCA) valid(cn string, hosts ...string) cluster.TLSFiles {
	return ca.issue(cn, hosts, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
}

// TestTLSEndToEnd runs `gpunotes scheduler` and `gpunotes cuda-worker` (two workers) with
// mutual TLS: a client connected with ConnectTLS submits tasks, one task's input is fetched
// from the other worker's data port (TLS too), and a gpuarray computes on the cluster. A
// plaintext client is refused and the refusal logged; a wrong token is refused under TLS.
func TestTLSEndToEnd(t *testing.T) {
	ca := newTestCA(t, "cluster")
	srv := ca.valid("scheduler", "127.0.0.1")
	wrk := ca.valid("worker", "worker.invalid") // names on worker certificates are not checked
	cli := ca.valid("client")
	token := randHex(16)
	sched, addr, _ := startScheduler(t, "127.0.0.1:0", token, append([]string{"--dashboard", "off"}, srv.Args()...)...)
	p, stdout := startProcToken(t, "", token, append([]string{"cuda-worker", addr, "--cpu", "--name-prefix", "w",
		"--nworkers", "2", "--nthreads", "1"}, wrk.Args()...)...)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	cfg, err := cli.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.ConnectTLS(addr, token, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	waitWorkers(t, c, 30*time.Second, "w-cpu0", "w-cpu1")
	if !c.TLS() || !strings.Contains(c.String(), addr+" (TLS)") || !strings.Contains(c.HTML(), "(TLS)") {
		t.Fatalf("repr does not show TLS: %s", c.String())
	}
	ctx := ctxT(t)
	if v, err := c.Submit(inc, 41).Result(ctx); err != nil || v != 42 {
		t.Fatalf("inc(41) = %v, %v", v, err)
	}
	const n = 1 << 18
	x := c.Submit(fill, n, 3, cluster.Workers("w-cpu0"))
	y := c.Submit(total, x, cluster.Workers("w-cpu1"))
	if v, err := y.Result(ctx); err != nil || v != 3*n {
		t.Fatalf("total over a worker-to-worker fetch = %v, %v; worker log:\n%s", v, err, p.log)
	}
	rs := gpuarray.NewRandomState(7)
	arr := rs.Normal(0, 1, gpuarray.Shape(400, 300), gpuarray.Chunks(100, 100)).Add(2).Sum()
	local, err := arr.Float64(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	got, err := arr.Float64(gpuarray.On(c))
	if err != nil || got != local {
		t.Fatalf("array sum over TLS = %v, %v; want %v", got, err, local)
	}

	// Plaintext is refused, with a reason on both sides.
	_, err = cluster.Connect(addr, token)
	if !errors.Is(err, cluster.ErrRefused) || !strings.Contains(err.Error(), "requires TLS") {
		t.Fatalf("plaintext client: %v", err)
	}
	// The token is still checked.
	_, err = cluster.ConnectTLS(addr, "wrong", cfg)
	if !errors.Is(err, cluster.ErrRefused) || !strings.Contains(err.Error(), "bad token") {
		t.Fatalf("wrong token under TLS: %v", err)
	}
	waitLog(t, sched.log, "refused a plaintext connection from 127.0.0.1:")
	waitLog(t, sched.log, "bad token")
	t.Logf("scheduler log:\n%s", sched.log)
}

// waitLog waits until the log holds want.
func waitLog(t testing.TB, l fmt.Stringer, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if strings.Contains(l.String(), want) {
			return
		}
	}
	t.Fatalf("log lacks %q:\n%s", want, l)
}

// memLog collects a scheduler's log lines.
type memLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (m *memLog) logf(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintf(&m.b, format+"\n", args...)
}

func (m *memLog) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.b.String()
}

// serveTLS runs a scheduler in this process with files and returns its address and log.
func serveTLS(t *testing.T, token string, files cluster.TLSFiles) (string, *memLog) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := &memLog{}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- cluster.ServeScheduler(ctx, cluster.SchedulerConfig{Listen: "127.0.0.1:0", Token: token, Dashboard: "off",
			TLS: files, Logf: log.logf, Ready: func(addr, _ string) { ready <- addr }})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case a := <-ready:
		return a, log
	case err := <-done:
		t.Fatalf("scheduler: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("scheduler did not start")
	}
	return "", nil
}

// joinOnce runs a worker (in this process) that must be refused; it returns its error.
func joinOnce(t *testing.T, addr, token string, files cluster.TLSFiles) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := cluster.RunWorker(ctx, cluster.WorkerConfig{Scheduler: addr, Token: token, Name: "probe", TLS: files,
		Reconnect: time.Second}, nil)
	if ctx.Err() != nil {
		t.Fatalf("worker kept retrying instead of failing: %v", err)
	}
	if !errors.Is(err, cluster.ErrRefused) {
		t.Fatalf("worker error %v does not wrap ErrRefused", err)
	}
	t.Logf("worker: %v", err)
	return err
}

// TestTLSBadCertificatesAreRefused covers the bad inputs of TLS: each gives a clear error on
// the worker's or client's side and a log line naming the remote address on the scheduler's.
func TestTLSBadCertificatesAreRefused(t *testing.T) {
	ca := newTestCA(t, "cluster")
	other := newTestCA(t, "other")
	token := randHex(16)
	addr, log := serveTLS(t, token, ca.valid("scheduler", "127.0.0.1"))

	t.Run("plaintext worker", func(t *testing.T) {
		err := joinOnce(t, addr, token, cluster.TLSFiles{})
		if !strings.Contains(err.Error(), "requires TLS") {
			t.Fatalf("plaintext worker: %v", err)
		}
		waitLog(t, log, "refused a plaintext connection from 127.0.0.1:")
	})
	t.Run("certificate of another CA", func(t *testing.T) {
		bad := other.valid("intruder")
		bad.CA = ca.file // it trusts the scheduler, but the scheduler does not trust it
		err := joinOnce(t, addr, token, bad)
		if !strings.Contains(err.Error(), "rejected this side's TLS certificate") {
			t.Fatalf("worker with another CA's certificate: %v", err)
		}
		waitLog(t, log, "certificate signed by unknown authority")
	})
	t.Run("expired certificate", func(t *testing.T) {
		old := ca.issue("old", nil, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
		err := joinOnce(t, addr, token, old)
		if !strings.Contains(err.Error(), "rejected this side's TLS certificate") {
			t.Fatalf("worker with an expired certificate: %v", err)
		}
		waitLog(t, log, "expired")
	})
	t.Run("scheduler from another CA", func(t *testing.T) {
		mine := other.valid("worker2")
		err := joinOnce(t, addr, token, mine)
		if !strings.Contains(err.Error(), "unknown authority") {
			t.Fatalf("worker trusting another CA: %v", err)
		}
	})
	t.Run("wrong host name", func(t *testing.T) {
		named, _ := serveTLS(t, token, ca.valid("elsewhere", "elsewhere.example"))
		cfg, err := ca.valid("client").ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		_, err = cluster.ConnectTLS(named, token, cfg)
		var he x509.HostnameError
		if !errors.Is(err, cluster.ErrRefused) || !errors.As(err, &he) || !strings.Contains(err.Error(), "127.0.0.1") {
			t.Fatalf("scheduler certificate for another host: %v", err)
		}
		t.Logf("client: %v", err)
	})
	t.Run("missing key", func(t *testing.T) {
		err := cluster.ServeScheduler(context.Background(), cluster.SchedulerConfig{Listen: "127.0.0.1:0", Token: token,
			TLS: cluster.TLSFiles{CA: ca.file}})
		if err == nil || !strings.Contains(err.Error(), "--tls-cert and --tls-key are required") {
			t.Fatalf("scheduler with only a CA: %v", err)
		}
	})
	t.Logf("scheduler log:\n%s", log)
}
