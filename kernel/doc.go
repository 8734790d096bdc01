// Package kernel speaks the Jupyter messaging protocol (version 5.3) over ZeroMQ: it reads the
// connection file, binds the shell, control, iopub, stdin and heartbeat sockets, verifies and
// signs messages, and dispatches requests to an Executor, which runs the code.
//
// Message types and dispatch live here; execution does not. main wires an interp session in.
package kernel
