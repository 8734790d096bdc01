module github.com/gpunotes/gpunotes

go 1.26.8

require (
	github.com/NVIDIA/go-nvml v0.13.3-0 // indirect
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/go-zeromq/goczmq/v4 v4.2.2 // indirect
	github.com/go-zeromq/zmq4 v0.17.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/traefik/yaegi v0.16.1 // indirect
	golang.org/x/sync v0.12.0 // indirect
	golang.org/x/text v0.23.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
