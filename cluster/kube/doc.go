// Package kube places cluster workers with Kubernetes: New creates a Deployment of worker pods,
// each running `gpunotes cuda-worker` against a scheduler Service with one nvidia.com/gpu, the
// token coming from a Secret; Scale changes its replicas and Close deletes it. The scheduler
// itself is deployed with the manifests in deploy/kubernetes (or run anywhere the pods can
// reach).
//
// It is its own package so that only programs that place workers on Kubernetes link client-go.
package kube
