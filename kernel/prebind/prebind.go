// Package prebind listens on a Jupyter kernel's TCP ports while the program is still
// initializing its packages.
//
// A Jupyter client connects its sockets within milliseconds of spawning the kernel. libzmq
// answers a refused connection by retrying after its reconnect interval (100 ms), so a kernel
// that is not yet listening when the client's shell socket connects answers 100 ms late, however
// fast it is after that. gpunotes links large packages (the interpreter's symbol tables, Arrow,
// plotting) whose initialization takes longer than the client's head start.
//
// Go initializes a package as soon as its imports are and no package before it in import-path
// order is ready. This package imports only early packages (no net: that one waits for most of
// the program), so when the process was started as `gpunotes kernel CONNECTION_FILE` its init
// binds the IPv4 TCP ports of the connection file with plain system calls, before the large
// packages run. The kernel's transport then takes each listener with [Take] instead of binding
// again. Connections made before the kernel accepts wait in the listen backlog.
package prebind

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

var (
	mu  sync.Mutex
	fds map[string]int
)

func init() {
	if len(os.Args) == 3 && os.Args[1] == "kernel" {
		Bind(os.Args[2])
	}
}

// Bind listens on the TCP ports named by the connection file at path, keeping each socket for
// [Take]. It does nothing for another transport or an address that is not IPv4, and leaves a
// port it cannot bind (or a file it cannot read) to the kernel, which reports the error when it
// binds.
func Bind(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var ci struct {
		Transport string `json:"transport"`
		IP        string `json:"ip"`
		Shell     int    `json:"shell_port"`
		Control   int    `json:"control_port"`
		IOPub     int    `json:"iopub_port"`
		Stdin     int    `json:"stdin_port"`
		HB        int    `json:"hb_port"`
	}
	if json.Unmarshal(b, &ci) != nil || (ci.Transport != "" && ci.Transport != "tcp") {
		return
	}
	host := ci.IP
	if host == "" || host == "*" {
		host = "0.0.0.0"
	}
	ip, ok := parseIPv4(host)
	if !ok {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	for _, port := range []int{ci.Shell, ci.Control, ci.IOPub, ci.Stdin, ci.HB} {
		addr := Addr(ci.IP, strconv.Itoa(port))
		if _, ok := fds[addr]; ok || port <= 0 || port > 65535 {
			continue
		}
		fd, err := listen(ip, port)
		if err != nil {
			continue
		}
		if fds == nil {
			fds = map[string]int{}
		}
		fds[addr] = fd
	}
}

// listen binds and listens on one IPv4 TCP port as Go's net package does (close-on-exec,
// non-blocking, SO_REUSEADDR).
func listen(ip [4]byte, port int) (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: ip}); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	if err := syscall.Listen(fd, 4096); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

func parseIPv4(s string) ([4]byte, bool) {
	var ip [4]byte
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return ip, false
	}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 8)
		if err != nil {
			return ip, false
		}
		ip[i] = byte(n)
	}
	return ip, true
}

// Addr is the address a TCP endpoint's host and port name, as the kernel's transport spells
// it: an empty or "*" host is every interface.
func Addr(host, port string) string {
	if host == "" || host == "*" {
		host = "0.0.0.0"
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// Take returns the listening socket bound early on the TCP address addr (host:port as [Addr]
// spells it) as a file, and forgets it; nil when none was bound there. The caller makes a
// listener of it (net.FileListener) and closes the file.
func Take(addr string) *os.File {
	mu.Lock()
	defer mu.Unlock()
	fd, ok := fds[addr]
	if !ok {
		return nil
	}
	delete(fds, addr)
	return os.NewFile(uintptr(fd), "tcp:"+addr)
}

// CloseRest closes the sockets no one took, so their ports are free again.
func CloseRest() {
	mu.Lock()
	defer mu.Unlock()
	for addr, fd := range fds {
		syscall.Close(fd)
		delete(fds, addr)
	}
}
