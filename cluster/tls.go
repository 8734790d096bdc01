package cluster

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// TLSFiles names the PEM files that put a cluster's connections under TLS: the flags
// --tls-cert, --tls-key and --tls-ca of `gpunotes scheduler`, `worker` and `cuda-worker`.
// The zero value is plaintext. With TLS, every connection is encrypted: workers and clients
// to the scheduler, and workers to each other's data ports. The token is checked as without.
//
//   - The scheduler needs Cert and Key. With CA it asks for mutual TLS: workers and clients
//     must present certificates signed by CA.
//   - A worker needs Cert and Key too: it presents them to the scheduler (mutual TLS) and
//     serves its data port with them. CA (or the system's roots without it) verifies the
//     scheduler, whose certificate must name the host workers dial (DNS name or IP address).
//   - A client (ConnectTLS) needs CA to trust the scheduler, and Cert and Key when the
//     scheduler asks for mutual TLS.
//
// Peers' data ports are verified against CA without a host name check (workers' addresses
// are assigned at run time); without CA they are verified by name against the system's roots.
type TLSFiles struct {
	Cert string // certificate chain, PEM
	Key  string // private key of Cert, PEM
	CA   string // CA certificates, PEM: trusted for peers, and required of them (mutual TLS)
}

// Enabled reports whether any TLS file is set.
func (f TLSFiles) Enabled() bool { return f.Cert != "" || f.Key != "" || f.CA != "" }

// Args returns the files as flags of the gpunotes subcommands (none when TLS is off).
func (f TLSFiles) Args() []string {
	var a []string
	if f.Cert != "" {
		a = append(a, "--tls-cert", f.Cert)
	}
	if f.Key != "" {
		a = append(a, "--tls-key", f.Key)
	}
	if f.CA != "" {
		a = append(a, "--tls-ca", f.CA)
	}
	return a
}

func (f TLSFiles) load(needCert bool) (*tls.Certificate, *x509.CertPool, error) {
	if (f.Cert == "") != (f.Key == "") {
		return nil, nil, errors.New("TLS: --tls-cert and --tls-key go together")
	}
	if needCert && f.Cert == "" {
		return nil, nil, errors.New("TLS: --tls-cert and --tls-key are required")
	}
	var cert *tls.Certificate
	if f.Cert != "" {
		c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("TLS: load certificate %s and key %s: %w", f.Cert, f.Key, err)
		}
		cert = &c
	}
	var pool *x509.CertPool
	if f.CA != "" {
		b, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, nil, fmt.Errorf("TLS: read CA: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, nil, fmt.Errorf("TLS: CA file %s holds no PEM certificate", f.CA)
		}
	}
	return cert, pool, nil
}

// ServerConfig is the scheduler's TLS configuration: its certificate, and with CA, client
// certificates required and verified against it.
func (f TLSFiles) ServerConfig() (*tls.Config, error) {
	cert, pool, err := f.load(true)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
	if pool != nil {
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// ClientConfig is a worker's or client's TLS configuration toward the scheduler: CA (else the
// system's roots) verifies the scheduler, and Cert, when set, is presented for mutual TLS. The
// server name is taken from the address dialed (see ConnectTLS).
func (f TLSFiles) ClientConfig() (*tls.Config, error) {
	cert, pool, err := f.load(false)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.GetClientCertificate = presentAlways(cert)
	}
	return cfg, nil
}

// presentAlways presents cert whatever CAs the server names, so that a certificate from the
// wrong CA is refused by the server with a reason ("unknown authority"), not left unsent.
func presentAlways(cert *tls.Certificate) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
}

// peerConfigs are the TLS configurations of a worker's data port: serving it, and fetching
// from peers (verified against the CA without a host name check when a CA is given).
func (f TLSFiles) peerConfigs() (serve, fetch *tls.Config, err error) {
	cert, pool, err := f.load(true)
	if err != nil {
		return nil, nil, err
	}
	serve = &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
	fetch = &tls.Config{GetClientCertificate: presentAlways(cert), MinVersion: tls.VersionTLS12}
	if pool != nil {
		serve.ClientCAs, serve.ClientAuth = pool, tls.RequireAndVerifyClientCert
		fetch.InsecureSkipVerify = true // the chain is verified below, the name is not
		fetch.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("peer presented no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
			if err != nil {
				return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
			}
			return nil
		}
	}
	return serve, fetch, nil
}

// tlsNote describes a scheduler's transport for logs and reprs.
func tlsNote(on, mutual bool) string {
	switch {
	case on && mutual:
		return "TLS, mutual"
	case on:
		return "TLS"
	}
	return "plaintext"
}

// withServerName returns cfg for dialing hostport: ServerName is its host unless set.
func withServerName(cfg *tls.Config, hostport string) *tls.Config {
	c := cfg.Clone()
	if c.ServerName == "" && !c.InsecureSkipVerify {
		host, _, err := net.SplitHostPort(hostport)
		if err != nil {
			host = hostport
		}
		c.ServerName = host
	}
	return c
}

// tlsHandshake runs the client side of the handshake on c, bounded by timeout.
func tlsHandshake(c net.Conn, cfg *tls.Config, hostport string, timeout time.Duration) (net.Conn, error) {
	tc := tls.Client(c, withServerName(cfg, hostport))
	_ = tc.SetDeadline(time.Now().Add(timeout))
	if err := tc.Handshake(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", hostport, tlsExplain(err))
	}
	_ = tc.SetDeadline(time.Time{})
	return tc, nil
}

// tlsExplain adds what to do to TLS errors that say too little by themselves.
func tlsExplain(err error) error {
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Op == "remote error":
		return fmt.Errorf("the peer rejected this side's TLS certificate (%w): it must be signed by the peer's --tls-ca and be valid now", err)
	case err != nil && strings.Contains(err.Error(), "first record does not look like a TLS handshake"):
		return fmt.Errorf("%w (the peer speaks plaintext: it has no --tls-cert)", err)
	}
	return err
}

// isTLSRefusal reports whether err is a certificate problem: retrying does not help.
func isTLSRefusal(err error) bool {
	var ve *tls.CertificateVerificationError
	var he x509.HostnameError
	var ue x509.UnknownAuthorityError
	var ie x509.CertificateInvalidError
	var op *net.OpError
	return errors.As(err, &ve) || errors.As(err, &he) || errors.As(err, &ue) || errors.As(err, &ie) ||
		(errors.As(err, &op) && op.Op == "remote error")
}

// peekedConn is a connection whose first bytes were read to tell TLS from plaintext.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// tlsRecordHandshake is the first byte of every TLS connection (a handshake record).
const tlsRecordHandshake = 0x16

// sniffTLS reads the first byte of c (within the deadline set on c) and reports whether the
// peer starts a TLS handshake; the returned connection still yields that byte.
func sniffTLS(c net.Conn) (net.Conn, bool, error) {
	r := bufio.NewReaderSize(c, 512)
	b, err := r.Peek(1)
	if err != nil {
		return nil, false, err
	}
	return &peekedConn{Conn: c, r: r}, b[0] == tlsRecordHandshake, nil
}
