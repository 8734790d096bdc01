package cluster

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Every connection to a scheduler or to a worker's data port starts with a mutual HMAC
// challenge-response over the shared token, before any frame of variable size is read (plaintext
// and TLS alike; under TLS it runs inside the TLS session). Neither side ever sends the token:
//
//	dialer   -> listener  authMagic, role (1 byte), dialer nonce (32 bytes)
//	listener -> dialer    status (1 byte: authGo, or authNeedTLS then close), listener nonce (32)
//	dialer   -> listener  HMAC(token, "gpunotes dialer" | role | listener nonce | dialer nonce)
//	listener -> dialer    verdict (1 byte: authGo or authBadToken) and, when authGo,
//	                      HMAC(token, "gpunotes listener" | role | dialer nonce | listener nonce)
//
// The dialer proves itself first, so a listener that does not know the token learns only an
// HMAC, never the token; the dialer then checks the listener's proof before it trusts any frame
// (a worker reconnecting to whatever now listens on its scheduler's port refuses an impostor).
// The different labels keep one side's proof from being replayed as the other's.
const (
	authMagic   = "GNAUTH1\x00"
	authNonce   = 32
	authMAC     = sha256.Size
	openerLen   = len(authMagic) + 1 + authNonce
	authTimeout = 10 * time.Second

	authGo       = 0
	authBadToken = 1
	authNeedTLS  = 2

	roleWorker  = 'w'
	roleClient  = 'c'
	roleData    = 'd' // a peer fetching from a worker's data port
	roleShuffle = 's' // a peer pushing shuffle shards to a worker's data port
)

// errImpostor is returned to a dialer whose listener could not prove that it knows the token.
var errImpostor = errors.New("the peer did not prove that it knows the cluster token (not our scheduler, or another token)")

// errBadToken is returned to a dialer refused by the listener.
var errBadToken = errors.New("bad token")

func authTag(token, label string, role byte, a, b []byte) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(label))
	m.Write([]byte{role})
	m.Write(a)
	m.Write(b)
	return m.Sum(nil)
}

// NewToken returns a random token (32 bytes, hex), as Jupyter generates one when none is given.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// readOpener reads the dialer's first message: exactly openerLen bytes, nothing more.
func readOpener(r io.Reader) (role byte, nonce []byte, err error) {
	var buf [openerLen]byte
	if _, err := io.ReadFull(r, buf[:]); err != nil {
		return 0, nil, fmt.Errorf("read opener: %w", err)
	}
	if string(buf[:len(authMagic)]) != authMagic {
		return 0, nil, errors.New("not a gpunotes cluster connection (or an older protocol version)")
	}
	role = buf[len(authMagic)]
	switch role {
	case roleWorker, roleClient, roleData, roleShuffle:
	default:
		return 0, nil, fmt.Errorf("unknown role %q", role)
	}
	return role, append([]byte(nil), buf[len(authMagic)+1:]...), nil
}

// authListener runs the listener's side on c within authTimeout. It reads at most
// openerLen+authMAC bytes. It returns the dialer's role.
func authListener(c net.Conn, token string) (byte, error) {
	_ = c.SetDeadline(time.Now().Add(authTimeout))
	defer c.SetDeadline(time.Time{})
	return authListen(c, token)
}

func authListen(rw io.ReadWriter, token string) (byte, error) {
	role, nd, err := readOpener(rw)
	if err != nil {
		return 0, err
	}
	nl := make([]byte, authNonce)
	if _, err := rand.Read(nl); err != nil {
		return 0, fmt.Errorf("nonce: %w", err)
	}
	if _, err := rw.Write(append([]byte{authGo}, nl...)); err != nil {
		return 0, fmt.Errorf("send challenge: %w", err)
	}
	got := make([]byte, authMAC)
	if _, err := io.ReadFull(rw, got); err != nil {
		return 0, fmt.Errorf("read proof: %w", err)
	}
	if token == "" || !hmac.Equal(got, authTag(token, "gpunotes dialer", role, nl, nd)) {
		_, _ = rw.Write([]byte{authBadToken})
		return role, errBadToken
	}
	if _, err := rw.Write(append([]byte{authGo}, authTag(token, "gpunotes listener", role, nd, nl)...)); err != nil {
		return 0, fmt.Errorf("send proof: %w", err)
	}
	return role, nil
}

// refuseNeedTLS answers a plaintext dialer of a TLS-only listener.
func refuseNeedTLS(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, _, err := readOpener(c); err == nil {
		_, _ = c.Write([]byte{authNeedTLS})
	}
}

// authDialer runs the dialer's side on c within authTimeout.
func authDialer(c net.Conn, token string, role byte) error {
	_ = c.SetDeadline(time.Now().Add(authTimeout))
	defer c.SetDeadline(time.Time{})
	return authDial(c, token, role)
}

func authDial(rw io.ReadWriter, token string, role byte) error {
	if token == "" {
		return errors.New("no cluster token (set GPUNOTES_CLUSTER_TOKEN or pass a token file)")
	}
	nd := make([]byte, authNonce)
	if _, err := rand.Read(nd); err != nil {
		return fmt.Errorf("nonce: %w", err)
	}
	if _, err := rw.Write(append(append([]byte(authMagic), role), nd...)); err != nil {
		return fmt.Errorf("send opener: %w", err)
	}
	var st [1 + authNonce]byte
	if _, err := io.ReadFull(rw, st[:1]); err != nil {
		return fmt.Errorf("read challenge: %w", err)
	}
	switch st[0] {
	case authGo:
	case authNeedTLS:
		return fmt.Errorf("%w: it requires TLS: pass --tls-ca (and --tls-cert, --tls-key) or use ConnectTLS", ErrRefused)
	default:
		return fmt.Errorf("read challenge: status %d", st[0])
	}
	if _, err := io.ReadFull(rw, st[1:]); err != nil {
		return fmt.Errorf("read challenge: %w", err)
	}
	nl := st[1:]
	if _, err := rw.Write(authTag(token, "gpunotes dialer", role, nl, nd)); err != nil {
		return fmt.Errorf("send proof: %w", err)
	}
	var v [1 + authMAC]byte
	if _, err := io.ReadFull(rw, v[:1]); err != nil {
		return fmt.Errorf("read verdict: %w", err)
	}
	if v[0] == authBadToken {
		return fmt.Errorf("%w: %w", ErrRefused, errBadToken)
	}
	if v[0] != authGo {
		return fmt.Errorf("read verdict: status %d", v[0])
	}
	if _, err := io.ReadFull(rw, v[1:]); err != nil {
		return fmt.Errorf("read proof: %w", err)
	}
	if !hmac.Equal(v[1:], authTag(token, "gpunotes listener", role, nd, nl)) {
		return errImpostor
	}
	return nil
}
