package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/google/uuid"

	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/kernel/prebind"
)

// Output receives a running cell's output; the kernel implements it for each execute request.
type Output interface {
	Stream(name, text string)
	Display(d display.Data, update bool)
	Clear(wait bool)
	Input(prompt string, password bool) (string, error)
}

// CellError is implemented by execution errors that carry Jupyter's error fields.
type CellError interface {
	error
	Parts() (ename, evalue string, traceback []string)
}

// Executor runs code for the kernel. Cursor positions are byte offsets into code.
type Executor interface {
	Execute(ctx context.Context, code string, out Output) (*display.Data, error)
	EvalExpr(ctx context.Context, expr string) (display.Data, error)
	Complete(code string, cursor int) (matches []string, start, end int)
	Inspect(code string, cursor, detail int) (map[string]any, bool)
	IsComplete(code string) (status, indent string)
}

// Options configures a kernel.
type Options struct {
	// HistoryPath is the history file (default: the Jupyter data dir's gpunotes/history.jsonl).
	HistoryPath string
	// Version is the implementation version reported in kernel_info.
	Version string
	// Logger receives protocol problems (default: stderr).
	Logger *log.Logger
	// MaxMessage bounds one frame and one message in bytes, checked from the frame headers
	// before anything is allocated; a peer that declares more is disconnected and logged
	// (default DefaultMaxMessage).
	MaxMessage int64
	// HandshakeTimeout bounds a new connection's ZMTP greeting (default DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// OnExecute, when set, receives each execute request's header (verbatim) before its code
	// runs: a crash reporter outside the process names that request when the process dies.
	OnExecute func(header []byte)
	// OnKernelInfo, when set, runs in its own goroutine once the first kernel_info_reply is
	// sent: work a kernel needs for cells, not for the front end's first question, starts
	// there instead of competing with that reply for the CPU.
	OnKernelInfo func()
	// Comms serves comms of kernel-side targets (widgets); nil closes every comm the front
	// end opens.
	Comms CommHandler
}

// Kernel serves one connection file.
type Kernel struct {
	infoOnce sync.Once // Options.OnKernelInfo
	ci       ConnectionInfo
	signer   *Signer
	exec     Executor
	opts     Options
	log      *log.Logger
	session  string
	hist     *History

	shell, control, stdin, iopub, hb zmq4.Socket
	sendMu                           sync.Mutex // one writer per socket at a time
	iopubMu                          sync.Mutex

	execCount int
	queue     chan *Message

	runMu     sync.Mutex
	runCancel context.CancelFunc

	stdinReplies chan *Message
	comms        *comms
	parentMu     sync.Mutex
	lastReq      *Message // the parent of comm messages sent between requests

	done     chan struct{}
	doneOnce sync.Once
	restart  bool
}

// New prepares a kernel for ci; Serve binds and runs it.
func New(ci ConnectionInfo, ex Executor, opts Options) (*Kernel, error) {
	signer, err := NewSigner(ci.SignatureScheme, ci.Key)
	if err != nil {
		return nil, err
	}
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = DefaultMaxMessage
	}
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = DefaultHandshakeTimeout
	}
	lg := opts.Logger
	if lg == nil {
		lg = log.New(os.Stderr, "gpunotes kernel: ", log.LstdFlags)
	}
	k := &Kernel{ci: ci, signer: signer, exec: ex, opts: opts, log: lg, session: uuid.NewString(),
		queue: make(chan *Message, 1024), stdinReplies: make(chan *Message, 1), comms: newComms(),
		done: make(chan struct{})}
	path := opts.HistoryPath
	if path == "" {
		path = defaultHistoryPath()
	}
	if k.hist, err = OpenHistory(path); err != nil {
		lg.Printf("history disabled: %v", err)
		k.hist, _ = OpenHistory(os.DevNull + ".d/none")
	}
	return k, nil
}

func defaultHistoryPath() string {
	if p := os.Getenv("GPUNOTES_HISTORY"); p != "" {
		return p
	}
	dir := os.Getenv("JUPYTER_DATA_DIR")
	if dir == "" {
		if x := os.Getenv("XDG_DATA_HOME"); x != "" {
			dir = x + "/jupyter"
		} else {
			home, _ := os.UserHomeDir()
			dir = home + "/.local/share/jupyter"
		}
	}
	return dir + "/gpunotes/history.jsonl"
}

// Serve binds the sockets and serves until shutdown or ctx ends. It reports whether the client
// asked for a restart.
func (k *Kernel) Serve(ctx context.Context) (restart bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	scheme, guard, err := registerGuarded(k.ci.Transport, k.opts.MaxMessage, k.opts.HandshakeTimeout, k.log)
	if err != nil {
		return false, err
	}
	k.shell = zmq4.NewRouter(ctx)
	k.control = zmq4.NewRouter(ctx)
	k.stdin = zmq4.NewRouter(ctx)
	k.iopub = zmq4.NewPub(ctx)
	k.hb = zmq4.NewRep(ctx)
	router := []string{"DEALER", "REQ", "ROUTER"}
	socks := []struct {
		s     zmq4.Socket
		port  int
		name  string
		peers []string
	}{{k.shell, k.ci.ShellPort, "shell", router}, {k.control, k.ci.ControlPort, "control", router}, {k.stdin, k.ci.StdinPort, "stdin", router},
		{k.iopub, k.ci.IOPubPort, "iopub", []string{"SUB", "XSUB"}}, {k.hb, k.ci.HBPort, "heartbeat", []string{"REQ", "DEALER"}}}
	for _, s := range socks {
		ep := k.ci.endpoint(s.port)
		addr, err := guard.Addr(ep[len(k.ci.Transport)+3:])
		if err != nil {
			return false, fmt.Errorf("bind %s on %s: %w", s.name, ep, err)
		}
		guard.name(addr, s.name, s.peers...)
		if err := s.s.Listen(scheme + "://" + addr); err != nil {
			return false, fmt.Errorf("bind %s on %s: %w", s.name, k.ci.endpoint(s.port), err)
		}
		defer s.s.Close()
	}
	// Ports bound early for another spelling of the address are free again.
	prebind.CloseRest()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT)
	defer signal.Stop(sigs)
	go func() {
		for {
			select {
			case <-sigs:
				k.interrupt()
			case <-k.done:
				return
			}
		}
	}()

	display.SetCommSink(lastParent{k})
	defer display.SetCommSink(nil)
	go k.heartbeat()
	go k.readLoop(k.shell, "shell", k.onShell)
	go k.readLoop(k.control, "control", k.onControl)
	go k.readLoop(k.stdin, "stdin", func(m *Message) {
		select {
		case k.stdinReplies <- m:
		default:
			k.log.Printf("stdin: unexpected %s dropped", m.Header.MsgType)
		}
	})
	go k.worker(ctx)
	select {
	case <-ctx.Done():
	case <-k.done:
	}
	k.interrupt()
	// Let the last replies leave before the sockets close.
	time.Sleep(20 * time.Millisecond)
	return k.restart, nil
}

func (k *Kernel) stop(restart bool) {
	k.doneOnce.Do(func() {
		k.restart = restart
		close(k.done)
	})
}

func (k *Kernel) heartbeat() {
	for {
		msg, err := k.hb.Recv()
		if err != nil {
			return
		}
		if err := k.hb.Send(msg); err != nil {
			return
		}
	}
}

func (k *Kernel) readLoop(s zmq4.Socket, name string, handle func(*Message)) {
	for {
		raw, err := s.Recv()
		if err != nil {
			select {
			case <-k.done:
			default:
				if !errors.Is(err, context.Canceled) {
					k.log.Printf("%s: receive: %v", name, err)
				}
			}
			return
		}
		// Oversized messages never get here: the guarded transport drops their connection.
		m, err := k.signer.Decode(raw.Frames)
		if err != nil {
			k.log.Printf("%s: dropped a message: %v", name, err)
			continue
		}
		handle(m)
	}
}

func replyType(req string) string {
	if len(req) > 8 && req[len(req)-8:] == "_request" {
		return req[:len(req)-8] + "_reply"
	}
	return req + "_reply"
}

func (k *Kernel) send(s zmq4.Socket, frames [][]byte) {
	k.sendMu.Lock()
	defer k.sendMu.Unlock()
	if err := s.Send(zmq4.NewMsgFrom(frames...)); err != nil {
		k.log.Printf("send: %v", err)
	}
}

func (k *Kernel) reply(s zmq4.Socket, req *Message, msgType string, content any) {
	frames, err := k.signer.Encode(k.session, msgType, req, content, req.Identities)
	if err != nil {
		k.log.Printf("encode %s: %v", msgType, err)
		return
	}
	k.send(s, frames)
}

// publish sends an IOPub message whose parent is req.
func (k *Kernel) publish(req *Message, msgType string, content any) {
	k.publishFull(req, msgType, content, nil, nil)
}

// publishFull sends an IOPub message with metadata and binary buffers.
func (k *Kernel) publishFull(req *Message, msgType string, content any, metadata map[string]any, buffers [][]byte) {
	frames, err := k.signer.EncodeFull(k.session, msgType, req, content, metadata, buffers, [][]byte{[]byte("kernel." + msgType)})
	if err != nil {
		k.log.Printf("encode %s: %v", msgType, err)
		return
	}
	k.iopubMu.Lock()
	defer k.iopubMu.Unlock()
	if err := k.iopub.Send(zmq4.NewMsgFrom(frames...)); err != nil {
		k.log.Printf("iopub send: %v", err)
	}
}

func (k *Kernel) status(req *Message, state string) {
	k.publish(req, "status", map[string]string{"execution_state": state})
}

// onShell queues execute requests in order; other shell requests are answered at once unless
// they must wait for running code.
func (k *Kernel) onShell(m *Message) {
	switch m.Header.MsgType {
	case "execute_request":
		k.queue <- m
	case "comm_info_request", "comm_open", "comm_msg", "comm_close":
		k.onComm(m)
	default:
		k.handle(k.shell, m)
	}
}

// controlTypes are the requests the control channel serves; anything else sent there gets an
// error reply (ipykernel would run an execute_request on control, blocking interrupts).
var controlTypes = map[string]bool{"shutdown_request": true, "interrupt_request": true,
	"kernel_info_request": true, "debug_request": true, "usage_request": true}

func (k *Kernel) onControl(m *Message) {
	if !controlTypes[m.Header.MsgType] {
		k.log.Printf("control: refused a %s (not a control message)", m.Header.MsgType)
		k.status(m, "busy")
		k.reply(k.control, m, replyType(m.Header.MsgType), map[string]any{"status": "error", "ename": "WrongChannel",
			"evalue":    fmt.Sprintf("%s is a shell message; the control channel serves %s", m.Header.MsgType, "shutdown, interrupt, kernel_info and debug requests"),
			"traceback": []string{}})
		k.status(m, "idle")
		return
	}
	k.handle(k.control, m)
}

func (k *Kernel) worker(ctx context.Context) {
	for {
		select {
		case m := <-k.queue:
			if m.run != nil {
				m.run()
				continue
			}
			k.handle(k.shell, m)
		case <-ctx.Done():
			return
		case <-k.done:
			return
		}
	}
}

// handle answers one request between busy and idle.
func (k *Kernel) handle(s zmq4.Socket, m *Message) {
	k.status(m, "busy")
	defer k.status(m, "idle")
	switch m.Header.MsgType {
	case "kernel_info_request":
		k.reply(s, m, "kernel_info_reply", k.kernelInfo())
		if k.opts.OnKernelInfo != nil {
			k.infoOnce.Do(func() { go k.opts.OnKernelInfo() })
		}
	case "execute_request":
		k.execute(s, m)
	case "complete_request":
		k.complete(s, m)
	case "inspect_request":
		k.inspect(s, m)
	case "is_complete_request":
		k.isComplete(s, m)
	case "history_request":
		k.history(s, m)
	case "interrupt_request":
		k.interrupt()
		k.reply(s, m, "interrupt_reply", map[string]any{"status": "ok"})
	case "shutdown_request":
		var c struct {
			Restart bool `json:"restart"`
		}
		_ = json.Unmarshal(m.Content, &c)
		k.reply(s, m, "shutdown_reply", map[string]any{"status": "ok", "restart": c.Restart})
		k.stop(c.Restart)
	default:
		k.log.Printf("unknown message type %q", m.Header.MsgType)
		k.reply(s, m, replyType(m.Header.MsgType), map[string]any{"status": "error", "ename": "UnknownMessageType",
			"evalue": fmt.Sprintf("gpunotes does not handle %q messages", m.Header.MsgType), "traceback": []string{}})
	}
}

func (k *Kernel) kernelInfo() map[string]any {
	v := k.opts.Version
	if v == "" {
		v = "dev"
	}
	return map[string]any{
		"status":                 "ok",
		"protocol_version":       ProtocolVersion,
		"implementation":         "gpunotes",
		"implementation_version": v,
		"language_info": map[string]any{
			"name":               "go",
			"version":            runtime.Version()[2:],
			"mimetype":           "text/x-go",
			"file_extension":     ".go",
			"pygments_lexer":     "go",
			"codemirror_mode":    "go",
			"nbconvert_exporter": "script",
		},
		"banner":     "gpunotes " + v + ": Go cells (yaegi) with gpuarray and cluster preloaded",
		"debugger":   false,
		"help_links": []map[string]string{{"text": "gpunotes magics: %help", "url": "https://pkg.go.dev/"}},
	}
}

func (k *Kernel) interrupt() {
	k.runMu.Lock()
	defer k.runMu.Unlock()
	if k.runCancel != nil {
		k.runCancel()
	}
}
