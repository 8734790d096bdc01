package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"go/token"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-zeromq/zmq4"

	"github.com/gpunotes/gpunotes/display"
)

type executeRequest struct {
	Code            string            `json:"code"`
	Silent          bool              `json:"silent"`
	StoreHistory    *bool             `json:"store_history"`
	UserExpressions map[string]string `json:"user_expressions"`
	AllowStdin      bool              `json:"allow_stdin"`
	StopOnError     *bool             `json:"stop_on_error"`
}

// cellOutput publishes one execute request's output on IOPub.
type cellOutput struct {
	k      *Kernel
	ctx    context.Context // the cell's: an interrupt cancels a pending input
	req    *Message
	silent bool
	stdin  bool
	count  int // the execution count the front end shows for the cell
}

// ExecutionCount is the cell's In[N], for the tracebacks of the executor.
func (o *cellOutput) ExecutionCount() int { return o.count }

func (o *cellOutput) Stream(name, text string) {
	if o.silent {
		return
	}
	o.k.publish(o.req, "stream", map[string]string{"name": name, "text": text})
}

// Error publishes an error output of the cell after its reply: what a goroutine it started
// ended with (a RecursionError), shown under the cell.
func (o *cellOutput) Error(ename, evalue string, traceback []string) {
	if o.silent {
		return
	}
	o.k.publish(o.req, "error", map[string]any{"ename": ename, "evalue": evalue, "traceback": traceback})
}

func (o *cellOutput) Display(d display.Data, update bool) {
	if o.silent {
		return
	}
	typ := "display_data"
	if update {
		typ = "update_display_data"
	}
	o.k.publish(o.req, typ, displayContent(d))
}

func (o *cellOutput) Clear(wait bool) {
	if o.silent {
		return
	}
	o.k.publish(o.req, "clear_output", map[string]bool{"wait": wait})
}

// Input sends an input_request on stdin and waits for the reply.
func (o *cellOutput) Input(prompt string, password bool) (string, error) {
	if !o.stdin {
		return "", fmt.Errorf("stdin is not available: this front end does not allow input (allow_stdin is false)")
	}
	k := o.k
	for len(k.stdinReplies) > 0 {
		<-k.stdinReplies
	}
	frames, err := k.signer.Encode(k.session, "input_request", o.req,
		map[string]any{"prompt": prompt, "password": password}, o.req.Identities)
	if err != nil {
		return "", err
	}
	var sent Header
	if err := json.Unmarshal(frames[len(o.req.Identities)+2], &sent); err != nil {
		return "", fmt.Errorf("input_request header: %w", err)
	}
	k.send(k.stdin, frames)
	for {
		select {
		case m := <-k.stdinReplies:
			if m.ParentHdr.MsgID != "" && m.ParentHdr.MsgID != sent.MsgID {
				// A late reply to an interrupted request belongs to no one now (jupyter_client
				// sends input_reply without a parent, which is taken as the current one's).
				k.log.Printf("stdin: dropped an input_reply to %q (waiting for %q)", m.ParentHdr.MsgID, sent.MsgID)
				continue
			}
			var c struct {
				Value string `json:"value"`
			}
			if err := json.Unmarshal(m.Content, &c); err != nil {
				return "", fmt.Errorf("decode input_reply: %w", err)
			}
			return c.Value, nil
		case <-o.ctx.Done():
			return "", fmt.Errorf("input cancelled: the cell was interrupted")
		case <-k.done:
			return "", fmt.Errorf("kernel shutting down")
		}
	}
}

func displayContent(d display.Data) map[string]any {
	md := d.Metadata
	if md == nil {
		md = map[string]any{}
	}
	c := map[string]any{"data": d.MIME, "metadata": md, "transient": map[string]any{}}
	if d.DisplayID != "" {
		c["transient"] = map[string]any{"display_id": d.DisplayID}
	}
	return c
}

func (k *Kernel) execute(s zmq4.Socket, m *Message) {
	var req executeRequest
	if err := json.Unmarshal(m.Content, &req); err != nil {
		k.reply(s, m, "execute_reply", map[string]any{"status": "error", "ename": "BadRequest",
			"evalue": "execute_request content: " + err.Error(), "traceback": []string{}, "execution_count": k.execCount})
		return
	}
	store := req.StoreHistory == nil || *req.StoreHistory
	if req.Silent {
		store = false
	}
	if store {
		k.execCount++
	}
	code, page, pageDetail, hasPage := req.Code, "", 0, false
	if rest, name, detail, ok := pageRequest(req.Code); ok {
		// "name?" (or "name??", with the source) pages the symbol's documentation, as IPython
		// does; code before it runs first.
		if strings.TrimSpace(rest) == "" {
			k.reply(s, m, "execute_reply", map[string]any{"status": "ok", "execution_count": k.execCount,
				"user_expressions": map[string]any{}, "payload": []any{k.pagePayload(name, detail)}})
			return
		}
		code, page, pageDetail, hasPage = rest, name, detail, true
	}
	count := k.execCount
	if !req.Silent {
		k.publish(m, "execute_input", map[string]any{"code": req.Code, "execution_count": count})
	}
	if store {
		if err := k.hist.Add(count, req.Code); err != nil {
			k.log.Printf("history: %v", err)
		}
	}

	k.setLast(m)
	if k.opts.OnExecute != nil {
		k.opts.OnExecute(m.HeaderRaw)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k.runMu.Lock()
	k.runCancel = cancel
	k.runMu.Unlock()
	out := &cellOutput{k: k, ctx: ctx, req: m, silent: req.Silent, stdin: req.AllowStdin, count: count}
	res, err := k.exec.Execute(ctx, code, out)
	var exprs map[string]any
	if err == nil {
		// Under the cell's context, so an interrupt stops a looping expression too.
		exprs = k.userExpressions(ctx, req.UserExpressions)
	}
	k.runMu.Lock()
	k.runCancel = nil
	k.runMu.Unlock()
	cancel()

	if err != nil {
		ename, evalue, tb := errorParts(err)
		if !req.Silent {
			k.publish(m, "error", map[string]any{"ename": ename, "evalue": evalue, "traceback": tb})
		}
		if req.StopOnError == nil || *req.StopOnError {
			// Requests already queued behind this one are aborted, as ipykernel does.
			k.drainAborted()
		}
		k.reply(s, m, "execute_reply", map[string]any{"status": "error", "execution_count": count,
			"ename": ename, "evalue": evalue, "traceback": tb})
		return
	}
	if res != nil && !req.Silent {
		c := displayContent(*res)
		delete(c, "transient")
		c["execution_count"] = count
		k.publish(m, "execute_result", c)
	}
	payload := []any{}
	if hasPage {
		payload = append(payload, k.pagePayload(page, pageDetail))
	}
	k.reply(s, m, "execute_reply", map[string]any{"status": "ok", "execution_count": count,
		"user_expressions": exprs, "payload": payload})
}

// pagePayload is the pager payload for name: its documentation (detail 0) or with its source.
func (k *Kernel) pagePayload(name string, detail int) map[string]any {
	data, found := k.exec.Inspect(name, len(name), detail)
	if !found {
		data = map[string]any{"text/plain": "no documentation found for " + name}
	}
	return map[string]any{"source": "page", "data": data, "start": 0}
}

// drainAborted answers every execute request already queued with status aborted.
func (k *Kernel) drainAborted() {
	for {
		select {
		case q := <-k.queue:
			if q.run != nil { // a widget callback: not a cell, so not aborted
				q.run()
				continue
			}
			k.status(q, "busy")
			k.reply(k.shell, q, "execute_reply", map[string]any{"status": "aborted", "execution_count": k.execCount})
			k.status(q, "idle")
		default:
			return
		}
	}
}

func errorParts(err error) (string, string, []string) {
	if ce, ok := err.(CellError); ok {
		n, v, tb := ce.Parts()
		if tb == nil {
			tb = []string{}
		}
		return n, v, tb
	}
	return "Error", err.Error(), []string{err.Error()}
}

func (k *Kernel) userExpressions(ctx context.Context, exprs map[string]string) map[string]any {
	out := map[string]any{}
	for name, expr := range exprs {
		d, err := k.exec.EvalExpr(ctx, expr)
		if err != nil {
			ename, evalue, tb := errorParts(err)
			out[name] = map[string]any{"status": "error", "ename": ename, "evalue": evalue, "traceback": tb}
			continue
		}
		md := d.Metadata
		if md == nil {
			md = map[string]any{}
		}
		out[name] = map[string]any{"status": "ok", "data": d.MIME, "metadata": md}
	}
	return out
}

// utf16ToByte converts a cursor position in UTF-16 code units (what front ends send) to a byte
// offset into s.
func utf16ToByte(s string, pos int) int {
	units := 0
	for i, r := range s {
		if units >= pos {
			return i
		}
		units += len(utf16.Encode([]rune{r}))
	}
	return len(s)
}

// byteToUTF16 converts a byte offset into s to UTF-16 code units.
func byteToUTF16(s string, off int) int {
	if off > len(s) {
		off = len(s)
	}
	units := 0
	for _, r := range s[:off] {
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
	}
	_ = utf8.RuneError
	return units
}

func (k *Kernel) complete(s zmq4.Socket, m *Message) {
	var c struct {
		Code      string `json:"code"`
		CursorPos int    `json:"cursor_pos"`
	}
	_ = json.Unmarshal(m.Content, &c)
	cur := utf16ToByte(c.Code, c.CursorPos)
	matches, start, end := k.exec.Complete(c.Code, cur)
	if matches == nil {
		matches = []string{}
	}
	k.reply(s, m, "complete_reply", map[string]any{"status": "ok", "matches": matches,
		"cursor_start": byteToUTF16(c.Code, start), "cursor_end": byteToUTF16(c.Code, end), "metadata": map[string]any{}})
}

func (k *Kernel) inspect(s zmq4.Socket, m *Message) {
	var c struct {
		Code        string `json:"code"`
		CursorPos   int    `json:"cursor_pos"`
		DetailLevel int    `json:"detail_level"`
	}
	_ = json.Unmarshal(m.Content, &c)
	data, found := k.exec.Inspect(c.Code, utf16ToByte(c.Code, c.CursorPos), c.DetailLevel)
	if data == nil {
		data = map[string]any{}
	}
	k.reply(s, m, "inspect_reply", map[string]any{"status": "ok", "found": found, "data": data, "metadata": map[string]any{}})
}

func (k *Kernel) isComplete(s zmq4.Socket, m *Message) {
	var c struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(m.Content, &c)
	st, indent := k.exec.IsComplete(c.Code)
	content := map[string]any{"status": st}
	if st == "incomplete" {
		content["indent"] = indent
	}
	k.reply(s, m, "is_complete_reply", content)
}

func (k *Kernel) history(s zmq4.Socket, m *Message) {
	var c struct {
		Output         bool   `json:"output"`
		Raw            bool   `json:"raw"`
		HistAccessType string `json:"hist_access_type"`
		Session        int    `json:"session"`
		Start          int    `json:"start"`
		Stop           int    `json:"stop"`
		N              int    `json:"n"`
		Pattern        string `json:"pattern"`
		Unique         bool   `json:"unique"`
	}
	_ = json.Unmarshal(m.Content, &c)
	var h [][]any
	switch c.HistAccessType {
	case "tail":
		h = k.hist.Tail(c.N)
	case "range":
		h = k.hist.Range(c.Session, c.Start, c.Stop)
	case "search":
		h = k.hist.Search(c.Pattern, c.N, c.Unique)
	default:
		k.reply(s, m, "history_reply", map[string]any{"status": "error", "ename": "BadRequest",
			"evalue": fmt.Sprintf("hist_access_type %q: want tail, range or search", c.HistAccessType), "traceback": []string{}, "history": []any{}})
		return
	}
	if c.Output {
		for i, e := range h {
			h[i] = []any{e[0], e[1], []any{e[2], nil}}
		}
	}
	k.reply(s, m, "history_reply", map[string]any{"status": "ok", "history": h})
}

// pageRequest recognizes a last line "name?" or "pkg.Name?" ("name??" asks for the source too),
// alone or after other code, as IPython does. It returns the code before that line.
func pageRequest(code string) (rest, name string, detail int, ok bool) {
	c := strings.TrimRight(code, " \t\r\n")
	i := strings.LastIndexByte(c, '\n')
	last := strings.TrimSpace(c[i+1:])
	if !strings.HasSuffix(last, "?") {
		return "", "", 0, false
	}
	name = strings.TrimSuffix(last, "?")
	if strings.HasSuffix(name, "?") {
		name, detail = strings.TrimSuffix(name, "?"), 1
	}
	for _, part := range strings.Split(name, ".") {
		if !token.IsIdentifier(part) {
			return "", "", 0, false
		}
	}
	if i < 0 {
		return "", name, detail, name != ""
	}
	return c[:i+1], name, detail, name != ""
}
