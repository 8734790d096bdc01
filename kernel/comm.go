package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/gpunotes/gpunotes/display"
)

// CommHandler serves the comms of kernel-side targets (the widgets' jupyter.widget and
// jupyter.widget.control); main wires it through Options.Comms. Its messages to the front end
// go through the display.CommSink it is given, or, from code of a cell, through the cell's own
// output, which the kernel also makes a display.CommSink.
type CommHandler interface {
	// CommOpen handles a comm_open from the front end; false means the target is unknown, and
	// the kernel closes the comm.
	CommOpen(id, target string, data json.RawMessage, buffers [][]byte, reply display.CommSink) bool
	// CommMsg handles a comm_msg. known is false for a comm it does not hold. A non-nil run is
	// Go code of the cells (observers, click handlers): the kernel runs it on its execution
	// queue, in order with cells, under interrupt handling, with its output sent to out (or,
	// when out is nil, published with the comm message as parent).
	CommMsg(id string, data json.RawMessage, buffers [][]byte, reply display.CommSink) (run func(), out display.Sink, known bool)
	// CommClose handles a comm_close from the front end.
	CommClose(id string, data json.RawMessage)
}

// CallbackRunner is implemented by executors that run cell callbacks as they run cells: with
// their output captured into out and ctx's cancellation interrupting interpreted code.
type CallbackRunner interface {
	RunCallback(ctx context.Context, out Output, fn func()) error
}

// comms is the registry of open comms: those the kernel's code opened (widgets) and those the
// front end opened to a registered target.
type comms struct {
	mu   sync.Mutex
	open map[string]string // comm id -> target name
}

func newComms() *comms { return &comms{open: map[string]string{}} }

// publishComm publishes a comm message with parent req and keeps the registry current.
func (k *Kernel) publishComm(req *Message, msgType string, content, metadata map[string]any, buffers [][]byte) {
	id, _ := content["comm_id"].(string)
	switch msgType {
	case "comm_open":
		t, _ := content["target_name"].(string)
		k.comms.mu.Lock()
		k.comms.open[id] = t
		k.comms.mu.Unlock()
	case "comm_close":
		k.comms.mu.Lock()
		delete(k.comms.open, id)
		k.comms.mu.Unlock()
	}
	k.publishFull(req, msgType, content, metadata, buffers)
}

// commReply publishes comm messages with a fixed parent: the request being handled.
type commReply struct {
	k   *Kernel
	req *Message
}

func (r commReply) Comm(msgType string, content, metadata map[string]any, buffers [][]byte) {
	r.k.publishComm(r.req, msgType, content, metadata, buffers)
}

// lastParent publishes comm messages sent outside any request (by goroutines between cells)
// with the last request the kernel handled as parent.
type lastParent struct{ k *Kernel }

func (l lastParent) Comm(msgType string, content, metadata map[string]any, buffers [][]byte) {
	l.k.parentMu.Lock()
	p := l.k.lastReq
	l.k.parentMu.Unlock()
	l.k.publishComm(p, msgType, content, metadata, buffers)
}

// Comm publishes a comm message of the running cell (a widget it created or changed).
func (o *cellOutput) Comm(msgType string, content, metadata map[string]any, buffers [][]byte) {
	o.k.publishComm(o.req, msgType, content, metadata, buffers)
}

// onComm serves comm_info_request, comm_open, comm_msg and comm_close from the shell reader:
// busy, the handler, and idle, all with the message as parent. A comm_msg whose handler
// returns Go code of the cells leaves its idle to the execution queue, after that code.
func (k *Kernel) onComm(m *Message) {
	k.setLast(m)
	k.status(m, "busy")
	var c struct {
		CommID     string          `json:"comm_id"`
		TargetName string          `json:"target_name"`
		Data       json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(m.Content, &c)
	h := k.opts.Comms
	switch m.Header.MsgType {
	case "comm_info_request":
		k.comms.mu.Lock()
		out := map[string]any{}
		for id, t := range k.comms.open {
			if c.TargetName == "" || c.TargetName == t {
				out[id] = map[string]string{"target_name": t}
			}
		}
		k.comms.mu.Unlock()
		k.reply(k.shell, m, "comm_info_reply", map[string]any{"status": "ok", "comms": out})
	case "comm_open":
		if h != nil && h.CommOpen(c.CommID, c.TargetName, c.Data, m.Buffers, commReply{k, m}) {
			k.comms.mu.Lock()
			k.comms.open[c.CommID] = c.TargetName
			k.comms.mu.Unlock()
			break
		}
		// An unknown target: close it so the front end is not left waiting.
		k.publish(m, "comm_close", map[string]any{"comm_id": c.CommID, "data": map[string]any{}})
	case "comm_msg":
		k.comms.mu.Lock()
		_, ok := k.comms.open[c.CommID]
		k.comms.mu.Unlock()
		if !ok || h == nil {
			k.log.Printf("comm_msg for unknown comm %s ignored", c.CommID)
			break
		}
		run, out, known := h.CommMsg(c.CommID, c.Data, m.Buffers, commReply{k, m})
		if !known {
			k.log.Printf("comm_msg for comm %s: no handler holds it", c.CommID)
		}
		if run != nil {
			m.run = func() { k.runCallback(m, run, out) }
			k.queue <- m
			return // idle follows the callback
		}
	case "comm_close":
		k.comms.mu.Lock()
		delete(k.comms.open, c.CommID)
		k.comms.mu.Unlock()
		if h != nil {
			h.CommClose(c.CommID, c.Data)
		}
	}
	k.status(m, "idle")
}

// callbackOutput is a callback's output: to out when the handler named one (an Output widget
// of the cell that registered the callback), else published with the comm message as parent.
type callbackOutput struct {
	cellOutput
	to display.Sink
}

func (o *callbackOutput) Stream(name, text string) {
	if s, ok := o.to.(interface{ Stream(name, text string) }); ok {
		s.Stream(name, text)
		return
	}
	o.cellOutput.Stream(name, text)
}

func (o *callbackOutput) Display(d display.Data, update bool) {
	if o.to != nil {
		o.to.Display(d, update)
		return
	}
	o.cellOutput.Display(d, update)
}

func (o *callbackOutput) Clear(wait bool) {
	if o.to != nil {
		o.to.Clear(wait)
		return
	}
	o.cellOutput.Clear(wait)
}

// runCallback runs a comm message's Go callbacks on the execution queue: interruptible as a
// cell is, then idle with the comm message as parent.
func (k *Kernel) runCallback(m *Message, run func(), to display.Sink) {
	defer k.status(m, "idle")
	k.setLast(m)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k.runMu.Lock()
	k.runCancel = cancel
	k.runMu.Unlock()
	defer func() {
		k.runMu.Lock()
		k.runCancel = nil
		k.runMu.Unlock()
	}()
	out := &callbackOutput{cellOutput: cellOutput{k: k, ctx: ctx, req: m}, to: to}
	var err error
	if r, ok := k.exec.(CallbackRunner); ok {
		err = r.RunCallback(ctx, out, run)
	} else {
		err = func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("callback panicked: %v", r)
				}
			}()
			run()
			return nil
		}()
	}
	if err != nil {
		ename, evalue, tb := errorParts(err)
		if out.to != nil {
			out.Stream("stderr", fmt.Sprintf("%s: %s\n", ename, evalue))
			return
		}
		k.publish(m, "error", map[string]any{"ename": ename, "evalue": evalue, "traceback": tb})
	}
}

func (k *Kernel) setLast(m *Message) {
	k.parentMu.Lock()
	k.lastReq = m
	k.parentMu.Unlock()
}
