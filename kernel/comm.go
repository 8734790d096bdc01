package kernel

import (
	"encoding/json"
	"sync"

	"github.com/go-zeromq/zmq4"
)

// comms is the registry of open comms. The kernel has no kernel-side comm targets yet, so a
// comm_open for an unknown target is answered with comm_close, as the protocol asks.
type comms struct {
	mu   sync.Mutex
	open map[string]string // comm id -> target name
}

func newComms() *comms { return &comms{open: map[string]string{}} }

func (k *Kernel) comm(s zmq4.Socket, m *Message) {
	var c struct {
		CommID     string `json:"comm_id"`
		TargetName string `json:"target_name"`
	}
	_ = json.Unmarshal(m.Content, &c)
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
		k.reply(s, m, "comm_info_reply", map[string]any{"status": "ok", "comms": out})
	case "comm_open":
		// No kernel-side targets are registered: close it so the front end is not left waiting.
		k.publish(m, "comm_close", map[string]any{"comm_id": c.CommID, "data": map[string]any{}})
	case "comm_msg":
		k.comms.mu.Lock()
		_, ok := k.comms.open[c.CommID]
		k.comms.mu.Unlock()
		if !ok {
			k.log.Printf("comm_msg for unknown comm %s ignored", c.CommID)
		}
	case "comm_close":
		k.comms.mu.Lock()
		delete(k.comms.open, c.CommID)
		k.comms.mu.Unlock()
	}
}
