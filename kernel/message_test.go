package kernel

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	s, err := NewSigner("hmac-sha256", "secret")
	if err != nil {
		t.Fatal(err)
	}
	frames, err := s.Encode("sess", "execute_request", nil, map[string]any{"code": "1+1"}, [][]byte{[]byte("id1")})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Decode(frames)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.MsgType != "execute_request" || m.Header.Version != "5.3" || string(m.Identities[0]) != "id1" {
		t.Fatalf("%+v", m.Header)
	}
	var c map[string]string
	if err := json.Unmarshal(m.Content, &c); err != nil || c["code"] != "1+1" {
		t.Fatalf("content %s", m.Content)
	}
	// A reply's parent header is the request's header, verbatim.
	reply, _ := s.Encode("sess", "execute_reply", m, map[string]any{}, m.Identities)
	r, err := s.Decode(reply)
	if err != nil || r.ParentHdr.MsgID != m.Header.MsgID {
		t.Fatalf("parent %+v %v", r.ParentHdr, err)
	}
}

func TestSignatureChecked(t *testing.T) {
	s, _ := NewSigner("hmac-sha256", "secret")
	other, _ := NewSigner("hmac-sha256", "other")
	frames, _ := other.Encode("sess", "execute_request", nil, map[string]any{"code": "1"}, nil)
	if _, err := s.Decode(frames); !errors.Is(err, ErrSignature) {
		t.Fatalf("wrong key: %v", err)
	}
	frames, _ = s.Encode("sess", "execute_request", nil, map[string]any{"code": "1"}, nil)
	frames[1] = nil // missing signature
	if _, err := s.Decode(frames); !errors.Is(err, ErrSignature) {
		t.Fatalf("missing signature: %v", err)
	}
	if _, err := NewSigner("hmac-md5", "k"); err == nil {
		t.Fatal("unsupported scheme accepted")
	}
}

func TestDecodeMalformed(t *testing.T) {
	s, _ := NewSigner("", "")
	cases := map[string][][]byte{
		"no delimiter": {[]byte("x")},
		"short":        {[]byte(delimiter), nil, []byte("{}")},
		"bad header":   {[]byte(delimiter), nil, []byte("{"), []byte("{}"), []byte("{}"), []byte("{}")},
		"no type":      {[]byte(delimiter), nil, []byte("{}"), []byte("{}"), []byte("{}"), []byte("{}")},
		"bad content":  {[]byte(delimiter), nil, []byte(`{"msg_type":"x"}`), []byte("{}"), []byte("{}"), []byte("{")},
	}
	for name, frames := range cases {
		if _, err := s.Decode(frames); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func TestCursorConversions(t *testing.T) {
	code := "é𝄞x := 1"
	// 'é' is 1 UTF-16 unit (2 bytes), '𝄞' 2 units (4 bytes).
	if b := utf16ToByte(code, 3); b != 6 {
		t.Fatalf("utf16ToByte = %d", b)
	}
	if u := byteToUTF16(code, 6); u != 3 {
		t.Fatalf("byteToUTF16 = %d", u)
	}
}

func TestReplyTypeAndPage(t *testing.T) {
	if replyType("frob_request") != "frob_reply" || replyType("odd") != "odd_reply" {
		t.Fatal(replyType("frob_request"))
	}
	if rest, n, d, ok := pageRequest("fmt.Println?"); !ok || n != "fmt.Println" || rest != "" || d != 0 {
		t.Fatal(rest, n, d, ok)
	}
	if rest, n, d, ok := pageRequest("x := 1\nfunc f() {}\n  f?? \n"); !ok || n != "f" || rest != "x := 1\nfunc f() {}\n" || d != 1 {
		t.Fatal(rest, n, d, ok)
	}
	for _, c := range []string{"x := a ? b", "x?\ny := 1", "a + b?"} {
		if _, _, _, ok := pageRequest(c); ok {
			t.Fatalf("%q is not a page request", c)
		}
	}
}

func TestHistory(t *testing.T) {
	path := t.TempDir() + "/h.jsonl"
	h, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	h.Add(1, "a := 1")
	h.Add(2, "b := 2")
	h2, _ := OpenHistory(path)
	if h2.Session() != h.Session()+1 {
		t.Fatalf("sessions %d %d", h.Session(), h2.Session())
	}
	h2.Add(1, "a := 3")
	if got := h2.Range(-1, 1, 3); len(got) != 2 || got[1][2] != "b := 2" {
		t.Fatalf("range of previous session: %v", got)
	}
	if got := h2.Search("a :=*", 0, false); len(got) != 2 {
		t.Fatalf("search: %v", got)
	}
	if got := h2.Tail(1); len(got) != 1 || got[0][2] != "a := 3" {
		t.Fatalf("tail: %v", got)
	}
}

// FuzzDecode: no input may panic the decoder.
func FuzzDecode(f *testing.F) {
	s, _ := NewSigner("hmac-sha256", "k")
	good, _ := s.Encode("s", "kernel_info_request", nil, map[string]any{}, [][]byte{[]byte("id")})
	f.Add(good[0], good[1], good[2], good[3], good[4], good[5], good[6])
	f.Add([]byte(""), []byte(delimiter), []byte("{"), []byte("}"), []byte("null"), []byte("[]"), []byte(`{"msg_type":1}`))
	f.Fuzz(func(t *testing.T, a, b, c, d, e, g, h []byte) {
		for _, signer := range []*Signer{s, {}} {
			m, err := signer.Decode([][]byte{a, b, c, d, e, g, h})
			if err == nil && m.Header.MsgType == "" {
				t.Fatal("decoded a message without msg_type")
			}
		}
	})
}

// TestReplayRefused: a signature seen once is refused after (jupyter_client's Session keeps
// the same digest history); the history forgets its oldest tenth when full.
func TestReplayRefused(t *testing.T) {
	s, _ := NewSigner("hmac-sha256", "secret")
	frames, _ := s.Encode("sess", "execute_request", nil, map[string]any{"code": "1"}, nil)
	if _, err := s.Decode(frames); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decode(frames); !errors.Is(err, ErrReplay) {
		t.Fatalf("replay: %v", err)
	}
	for i := 0; i < maxDigests; i++ {
		s.remember([]byte{byte(i), byte(i >> 8), byte(i >> 16), 1})
	}
	if len(s.seen) > maxDigests || len(s.seen) != len(s.order) {
		t.Fatalf("history holds %d signatures (%d in order), limit %d", len(s.seen), len(s.order), maxDigests)
	}
	if _, err := s.Decode(frames); err != nil {
		t.Fatalf("the oldest signature should have been forgotten: %v", err)
	}
}

// BenchmarkTrivialCellMessages encodes the five messages a trivial cell sends (busy,
// execute_input, execute_result, execute_reply, idle) and records its history line: the
// kernel's own per-cell work around the interpreter, without the sockets.
func BenchmarkTrivialCellMessages(b *testing.B) {
	s, err := NewSigner("hmac-sha256", "0123456789abcdef0123456789abcdef")
	if err != nil {
		b.Fatal(err)
	}
	req, err := s.Decode(mustEncode(b, s, "execute_request", nil, map[string]any{"code": "1+1", "silent": false}))
	if err != nil {
		b.Fatal(err)
	}
	h, err := OpenHistory(b.TempDir() + "/history.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		mustEncode(b, s, "status", req, map[string]string{"execution_state": "busy"})
		mustEncode(b, s, "execute_input", req, map[string]any{"code": "1+1", "execution_count": i})
		if err := h.Add(i, "1+1"); err != nil {
			b.Fatal(err)
		}
		mustEncode(b, s, "execute_result", req, map[string]any{"data": map[string]any{"text/plain": "2"}, "metadata": map[string]any{}, "execution_count": i})
		mustEncode(b, s, "execute_reply", req, map[string]any{"status": "ok", "execution_count": i, "user_expressions": map[string]any{}, "payload": []any{}})
		mustEncode(b, s, "status", req, map[string]string{"execution_state": "idle"})
	}
}

func mustEncode(b *testing.B, s *Signer, msgType string, parent *Message, content any) [][]byte {
	b.Helper()
	frames, err := s.Encode("sess", msgType, parent, content, [][]byte{[]byte("id")})
	if err != nil {
		b.Fatal(err)
	}
	return frames
}
