package kernel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/google/uuid"
)

// CrashSummary names the fatal error of a Go crash report in a sentence for the user.
func CrashSummary(report string) string {
	switch {
	case strings.Contains(report, "stack overflow") || strings.Contains(report, "runtime.morestack"):
		return "a cell overflowed its stack (deep or endless recursion); Go cannot recover from that"
	case strings.Contains(report, "out of memory"):
		return "the process ran out of memory; Go cannot recover from that"
	case strings.Contains(report, "concurrent map"):
		return "concurrent map access (a data race in a cell); Go cannot recover from that"
	}
	for _, l := range strings.Split(report, "\n") {
		if strings.HasPrefix(l, "fatal error: ") || strings.HasPrefix(l, "panic: ") {
			return strings.TrimSpace(l)
		}
	}
	return "a fatal runtime error"
}

// ReportDeath tells the front end, on the dead kernel's IOPub port, why it died: a stderr
// stream whose parent is the request that was running (parent: its header, verbatim, or nil).
// It holds the port for about a second, so that subscribers reconnect and receive the message
// before the kernel's restarter starts a new kernel on the same ports.
func ReportDeath(ci ConnectionInfo, parent []byte, why string) error {
	signer, err := NewSigner(ci.SignatureScheme, ci.Key)
	if err != nil {
		return err
	}
	// The dead process's sockets may close after the crash pipe that woke the reporter: the
	// port can still be taken for a moment, so the bind is retried for at most 5 s.
	var pub zmq4.Socket
	for deadline := time.Now().Add(5 * time.Second); ; {
		pub = zmq4.NewPub(context.Background())
		err := pub.Listen(ci.endpoint(ci.IOPubPort))
		if err == nil {
			break
		}
		pub.Close()
		inUse := errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
		if !inUse || time.Now().After(deadline) {
			return fmt.Errorf("bind iopub: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer pub.Close()
	req := &Message{HeaderRaw: parent}
	frames, err := signer.Encode(uuid.NewString(), "stream", req,
		map[string]string{"name": "stderr", "text": "The kernel died: " + why + ". It will be restarted; the session's state is lost.\n"},
		[][]byte{[]byte("kernel.stream")})
	if err != nil {
		return err
	}
	// Subscribers reconnect every 100 ms (libzmq's default), later on a busy machine: wait
	// until one has subscribed (a PUB drops what no subscriber takes), for at most 20 s.
	if tp, ok := pub.(zmq4.Topics); ok {
		for deadline := time.Now().Add(20 * time.Second); len(tp.Topics()) == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	} else {
		time.Sleep(500 * time.Millisecond)
	}
	if err := pub.Send(zmq4.NewMsgFrom(frames...)); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	time.Sleep(300 * time.Millisecond)
	return nil
}
