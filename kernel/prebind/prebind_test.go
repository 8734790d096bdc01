package prebind_test

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/internal/testenv"
	"github.com/gpunotes/gpunotes/kernel/prebind"
)

// freePorts returns n TCP ports of 127.0.0.1 that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func connectionFile(t *testing.T, transport, ip string, ports []int) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"transport": transport, "ip": ip, "shell_port": ports[0],
		"control_port": ports[1], "iopub_port": ports[2], "stdin_port": ports[3], "hb_port": ports[4],
		"key": "k", "signature_scheme": "hmac-sha256"})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "kernel.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBindListensBeforeAccept: after Bind a client's connect succeeds before anyone accepts,
// the connection is the one the taken listener accepts, and each port is taken once.
func TestBindListensBeforeAccept(t *testing.T) {
	ports := freePorts(t, 5)
	prebind.Bind(connectionFile(t, "tcp", "127.0.0.1", ports))
	defer prebind.CloseRest()
	addr := prebind.Addr("127.0.0.1", strconv.Itoa(ports[0]))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("connect before the kernel accepts: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("greeting")); err != nil {
		t.Fatal(err)
	}
	f := prebind.Take(addr)
	if f == nil {
		t.Fatalf("Take(%s) = nil after Bind", addr)
	}
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	buf := make([]byte, 8)
	if _, err := s.Read(buf); err != nil || string(buf) != "greeting" {
		t.Fatalf("accepted connection read %q, %v; want the client's greeting", buf, err)
	}
	if prebind.Take(addr) != nil {
		t.Fatalf("a second Take(%s) returned a socket", addr)
	}
	// The other four stay bound until CloseRest frees them.
	hb := prebind.Addr("127.0.0.1", strconv.Itoa(ports[4]))
	if _, err := net.Listen("tcp", hb); err == nil {
		t.Fatalf("heartbeat port %s was not bound", hb)
	}
	prebind.CloseRest()
	l2, err := net.Listen("tcp", hb)
	if err != nil {
		t.Fatalf("after CloseRest, port %s: %v", hb, err)
	}
	l2.Close()
}

// TestBindLeavesOtherTransports: ipc and IPv6 connection files are left to the kernel.
func TestBindLeavesOtherTransports(t *testing.T) {
	for _, tc := range []struct{ transport, ip string }{{"ipc", "/tmp/kernel-x"}, {"tcp", "::1"}, {"tcp", "localhost"}} {
		ports := freePorts(t, 5)
		prebind.Bind(connectionFile(t, tc.transport, tc.ip, ports))
		if f := prebind.Take(prebind.Addr(tc.ip, strconv.Itoa(ports[0]))); f != nil {
			f.Close()
			t.Errorf("%s %s: bound early; want it left to the kernel", tc.transport, tc.ip)
		}
		prebind.CloseRest()
	}
	prebind.Bind(filepath.Join(t.TempDir(), "missing.json"))
	prebind.CloseRest()
}

// TestInitRunsBeforeLargePackages guards the point of the package: in the gpunotes binary its
// init runs before the interpreter's symbol tables, Arrow's compute registry and plotting are
// initialized (the order is fixed when the binary is linked), so a kernel listens before them.
func TestInitRunsBeforeLargePackages(t *testing.T) {
	bin := testenv.Binary(t)
	cf := connectionFile(t, "tcp", "127.0.0.1", freePorts(t, 5))
	cmd := exec.Command(bin, "kernel", cf)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	late := map[string]bool{"github.com/traefik/yaegi/stdlib": true, "github.com/apache/arrow-go/v18/arrow/compute": true, "gonum.org/v1/plot": true}
	seen := false
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "init" {
			continue
		}
		switch {
		case f[1] == "github.com/gpunotes/gpunotes/kernel/prebind":
			seen = true
		case late[f[1]] && !seen:
			t.Fatalf("%s was initialized before kernel/prebind: the kernel's ports are bound after it", f[1])
		case f[1] == "main":
			if !seen {
				t.Fatal("kernel/prebind was not initialized in the gpunotes binary")
			}
			return
		}
	}
	t.Fatalf("no init trace up to main (err %v)", sc.Err())
}
