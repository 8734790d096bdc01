package kube_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/cluster/kube"
)

// TestClusterInterfaceFakeClientset drives a kube.Cluster through cluster.Cluster against
// client-go's fake clientset: Scale and Restart change the Deployment, RestartWorkers deletes
// the named workers' pods, and what Kubernetes cannot do, or what needs Connect, fails saying so.
func TestClusterInterfaceFakeClientset(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	k, err := kube.New(ctx, cs, kube.Options{Name: "nb-workers", Image: "gpunotes:test", Workers: 1, Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	var c cluster.Cluster = k
	deployment := func() (int32, map[string]string) {
		t.Helper()
		d, err := cs.AppsV1().Deployments("gpunotes").Get(ctx, "nb-workers", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas, d.Spec.Template.Annotations
	}

	if err := c.Scale(3); err != nil {
		t.Fatal(err)
	}
	if n, _ := deployment(); n != 3 {
		t.Fatalf("after Scale(3) through cluster.Cluster: %d replicas, want 3", n)
	}
	if err := c.Scale(-1); err == nil {
		t.Error("Scale(-1): no error")
	}

	if _, ann := deployment(); ann[kube.RestartedAtAnnotation] != "" {
		t.Fatalf("restartedAt before Restart: %v", ann)
	}
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	_, ann := deployment()
	if _, err := time.Parse(time.RFC3339Nano, ann[kube.RestartedAtAnnotation]); err != nil {
		t.Fatalf("after Restart the pod template's %s is %q: %v", kube.RestartedAtAnnotation, ann[kube.RestartedAtAnnotation], err)
	}

	for _, name := range []string{"nb-workers-a", "nb-workers-b"} {
		if _, err := cs.CoreV1().Pods("gpunotes").Create(ctx, workerPod(name, "nb-workers", "Running", true, ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.RestartWorkers("nb-workers-b-gpu0"); err != nil {
		t.Fatal(err)
	}
	pods, err := k.Pods(ctx)
	if err != nil || len(pods) != 1 || pods[0].Name != "nb-workers-a" {
		t.Fatalf("after RestartWorkers(nb-workers-b-gpu0): pods %+v (%v), want only nb-workers-a", pods, err)
	}
	if err := c.RestartWorkers("elsewhere-gpu0"); err == nil || !strings.Contains(err.Error(), "no worker pod of gpunotes/nb-workers runs elsewhere-gpu0") {
		t.Errorf("RestartWorkers of an unknown worker: %v", err)
	}

	if err := c.Adapt(1, 4); err == nil || !strings.Contains(err.Error(), "not supported on Kubernetes") ||
		!strings.Contains(err.Error(), "HorizontalPodAutoscaler") {
		t.Errorf("Adapt: %v", err)
	}
	if err := c.RetireWorkers("nb-workers-a-gpu0"); err == nil || !strings.Contains(err.Error(), "not supported on Kubernetes") {
		t.Errorf("RetireWorkers: %v", err)
	}
	if n, _ := deployment(); n != 3 {
		t.Errorf("Adapt and RetireWorkers changed the replicas to %d", n)
	}

	// The scheduler's methods need the client of Connect.
	if err := c.Publish("x", 1); !errors.Is(err, kube.ErrNotConnected) || !strings.Contains(err.Error(), "kube: Publish: ") {
		t.Errorf("Publish before Connect: %v", err)
	}
	if _, err := c.WhoHas(); !errors.Is(err, kube.ErrNotConnected) {
		t.Errorf("WhoHas before Connect: %v", err)
	}
	if _, err := c.RunOnWorkers(func() int { return 1 }); !errors.Is(err, kube.ErrNotConnected) {
		t.Errorf("RunOnWorkers before Connect: %v", err)
	}
	if err := c.WaitForWorkers(1, time.Minute); !errors.Is(err, kube.ErrNotConnected) {
		t.Errorf("WaitForWorkers before Connect: %v", err)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().Deployments("gpunotes").Get(ctx, "nb-workers", metav1.GetOptions{}); err == nil {
		t.Error("the Deployment survived Close through cluster.Cluster")
	}
}

// TestClusterInterfaceConnectedFakeClientset checks that, once connected to a loopback
// scheduler, the scheduler's methods of cluster.Cluster go through the client of Connect.
func TestClusterInterfaceConnectedFakeClientset(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- cluster.ServeScheduler(ctx, cluster.SchedulerConfig{Listen: "127.0.0.1:0", Token: "s3cret", Dashboard: "off",
			Ready: func(addr, _ string) { ready <- addr }})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-served:
		t.Fatalf("scheduler: %v", err)
	}
	defer func() {
		cancel()
		<-served
	}()
	k, err := kube.New(ctx, fake.NewClientset(), kube.Options{Name: "nb-workers", Image: "gpunotes:test", Workers: 0, Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	var c cluster.Cluster = k
	if _, err := k.Connect(ctx, addr); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish("answer", 42); err != nil {
		t.Fatal(err)
	}
	names, err := c.Datasets()
	if err != nil || len(names) != 1 || names[0] != "answer" {
		t.Fatalf("Datasets after Publish through kube.Cluster: %v (%v)", names, err)
	}
	got, err := k.Client().GetDataset("answer")
	if err != nil || got != 42 {
		t.Fatalf("the client of Connect's GetDataset: %v (%v), want 42", got, err)
	}
	if err := c.WaitForWorkers(0, time.Minute); err != nil {
		t.Errorf("WaitForWorkers(0): %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if k.Client() != nil {
		t.Error("Close left the client of Connect")
	}
}
