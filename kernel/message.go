package kernel

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ProtocolVersion is the messaging protocol version in every header.
const ProtocolVersion = "5.3"

// delimiter separates ZeroMQ routing identities from the message frames.
const delimiter = "<IDS|MSG>"

// Header is a message header.
type Header struct {
	MsgID    string `json:"msg_id"`
	Session  string `json:"session"`
	Username string `json:"username"`
	Date     string `json:"date"`
	MsgType  string `json:"msg_type"`
	Version  string `json:"version"`
}

// Message is one decoded Jupyter message.
type Message struct {
	Identities [][]byte
	Header     Header
	HeaderRaw  json.RawMessage // the header, verbatim: replies use it as their parent header
	Parent     json.RawMessage // the parent header, verbatim
	ParentHdr  Header
	Metadata   map[string]any
	Content    json.RawMessage
	Buffers    [][]byte

	run func() // set on a comm_msg queued to run Go callbacks of the cells
}

// Signer computes and checks HMAC signatures; with an empty key, messages are unsigned.
type Signer struct {
	mu  sync.Mutex
	mac hash.Hash
	// seen holds the signatures of accepted messages, so a replayed message is refused; order
	// bounds it (the oldest tenth is forgotten at maxDigests, as jupyter_client's Session does).
	seen  map[string]struct{}
	order []string
}

// maxDigests is how many accepted signatures a Signer remembers (jupyter_client: 2**16).
const maxDigests = 1 << 16

// NewSigner returns a signer for scheme (only hmac-sha256 is supported) and key.
func NewSigner(scheme, key string) (*Signer, error) {
	if key == "" {
		return &Signer{}, nil
	}
	if scheme != "" && scheme != "hmac-sha256" {
		return nil, fmt.Errorf("signature scheme %q not supported (want hmac-sha256)", scheme)
	}
	return &Signer{mac: hmac.New(sha256.New, []byte(key))}, nil
}

func (s *Signer) sign(parts ...[]byte) []byte {
	if s.mac == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mac.Reset()
	for _, p := range parts {
		s.mac.Write(p)
	}
	var buf [sha256.Size]byte
	sum := s.mac.Sum(buf[:0])
	out := make([]byte, hex.EncodedLen(len(sum)))
	hex.Encode(out, sum)
	return out
}

// Errors from Decode.
var (
	ErrNoDelimiter  = errors.New("no <IDS|MSG> delimiter")
	ErrShortMessage = errors.New("fewer than 5 frames after the delimiter")
	ErrSignature    = errors.New("bad or missing signature")
	ErrReplay       = errors.New("duplicate signature: a replayed message")
)

// remember records sig and reports whether it was new.
func (s *Signer) remember(sig []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]struct{}{}
	}
	k := string(sig)
	if _, dup := s.seen[k]; dup {
		return false
	}
	if len(s.order) >= maxDigests {
		cull := maxDigests / 10
		for _, old := range s.order[:cull] {
			delete(s.seen, old)
		}
		s.order = append(s.order[:0], s.order[cull:]...)
	}
	s.seen[k] = struct{}{}
	s.order = append(s.order, k)
	return true
}

// Decode parses the frames of one message and verifies its signature.
func (s *Signer) Decode(frames [][]byte) (m *Message, err error) {
	i := 0
	for i < len(frames) && string(frames[i]) != delimiter {
		i++
	}
	if i == len(frames) {
		return nil, ErrNoDelimiter
	}
	rest := frames[i+1:]
	if len(rest) < 5 {
		return nil, ErrShortMessage
	}
	sig, hdr, parent, meta, content := rest[0], rest[1], rest[2], rest[3], rest[4]
	if s.mac != nil {
		want := s.sign(hdr, parent, meta, content)
		if !hmac.Equal(want, sig) {
			return nil, ErrSignature
		}
	}
	// Checked after the rest decodes, so a malformed message cannot burn a signature.
	defer func() {
		if m != nil && s.mac != nil && !s.remember(sig) {
			m, err = nil, ErrReplay
		}
	}()
	m = &Message{Identities: frames[:i], HeaderRaw: json.RawMessage(hdr), Parent: json.RawMessage(parent), Content: json.RawMessage(content)}
	if err := json.Unmarshal(hdr, &m.Header); err != nil {
		return nil, fmt.Errorf("decode header: %w", err)
	}
	if m.Header.MsgType == "" {
		return nil, errors.New("header has no msg_type")
	}
	if len(bytes.TrimSpace(parent)) > 0 {
		if err := json.Unmarshal(parent, &m.ParentHdr); err != nil {
			return nil, fmt.Errorf("decode parent header: %w", err)
		}
	}
	if len(bytes.TrimSpace(meta)) > 0 {
		if err := json.Unmarshal(meta, &m.Metadata); err != nil {
			return nil, fmt.Errorf("decode metadata: %w", err)
		}
	}
	if !json.Valid(content) {
		return nil, errors.New("content is not valid JSON")
	}
	m.Buffers = append(m.Buffers, rest[5:]...)
	return m, nil
}

// msgSeq numbers the messages this process sends: a message ID is the session's (a random
// UUID per kernel) and this number, as jupyter_client's Session writes them; a random UUID per
// message cost a getrandom system call each, five per trivial cell.
var msgSeq atomic.Uint64

// Encode builds the frames of a new message of msgType, in reply to parent (may be nil).
func (s *Signer) Encode(session, msgType string, parent *Message, content any, idents [][]byte) ([][]byte, error) {
	return s.EncodeFull(session, msgType, parent, content, nil, nil, idents)
}

// EncodeFull is Encode with message metadata and binary buffers (frames after the content).
func (s *Signer) EncodeFull(session, msgType string, parent *Message, content any, metadata map[string]any, buffers, idents [][]byte) ([][]byte, error) {
	h := Header{MsgID: session + "_" + strconv.FormatUint(msgSeq.Add(1), 10), Session: session, Username: "kernel",
		Date: time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"), MsgType: msgType, Version: ProtocolVersion}
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	pb := []byte("{}")
	if parent != nil && len(parent.HeaderRaw) > 0 {
		pb = parent.HeaderRaw
	}
	cb, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("encode %s content: %w", msgType, err)
	}
	mb := []byte("{}")
	if len(metadata) > 0 {
		if mb, err = json.Marshal(metadata); err != nil {
			return nil, fmt.Errorf("encode %s metadata: %w", msgType, err)
		}
	}
	sig := s.sign(hb, pb, mb, cb) // buffers are not signed (jupyter_client signs the four)
	frames := make([][]byte, 0, len(idents)+6+len(buffers))
	frames = append(frames, idents...)
	frames = append(frames, []byte(delimiter), sig, hb, pb, mb, cb)
	frames = append(frames, buffers...)
	return frames, nil
}
