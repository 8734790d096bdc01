package kernel

import (
	"encoding/json"
	"fmt"
	"os"
)

// ConnectionInfo is the content of a Jupyter connection file.
type ConnectionInfo struct {
	Transport       string `json:"transport"`
	IP              string `json:"ip"`
	ShellPort       int    `json:"shell_port"`
	ControlPort     int    `json:"control_port"`
	IOPubPort       int    `json:"iopub_port"`
	StdinPort       int    `json:"stdin_port"`
	HBPort          int    `json:"hb_port"`
	Key             string `json:"key"`
	SignatureScheme string `json:"signature_scheme"`
}

// ReadConnectionFile parses a connection file.
func ReadConnectionFile(path string) (ConnectionInfo, error) {
	var ci ConnectionInfo
	b, err := os.ReadFile(path)
	if err != nil {
		return ci, fmt.Errorf("read connection file: %w", err)
	}
	if err := json.Unmarshal(b, &ci); err != nil {
		return ci, fmt.Errorf("parse connection file %s: %w", path, err)
	}
	if ci.Transport == "" {
		ci.Transport = "tcp"
	}
	if ci.SignatureScheme == "" {
		ci.SignatureScheme = "hmac-sha256"
	}
	return ci, nil
}

// endpoint returns the ZeroMQ address of one channel. With ipc, ports are file suffixes.
func (ci ConnectionInfo) endpoint(port int) string {
	if ci.Transport == "ipc" {
		return fmt.Sprintf("ipc://%s-%d", ci.IP, port)
	}
	return fmt.Sprintf("%s://%s:%d", ci.Transport, ci.IP, port)
}
