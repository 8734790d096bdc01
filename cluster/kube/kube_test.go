package kube_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpunotes/gpunotes/cluster/kube"
)

func workerPod(name, cluster string, phase corev1.PodPhase, ready bool, reason string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gpunotes",
			Labels: map[string]string{kube.ClusterLabel: cluster, kube.ComponentLabel: "worker"}},
		Status: corev1.PodStatus{Phase: phase},
	}
	if ready {
		p.Spec.NodeName = "gpu-node-1"
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	}
	if reason != "" {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: reason, Message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."})
	}
	return p
}

func TestNewScaleClose(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	k, err := kube.New(ctx, cs, kube.Options{Name: "nb-workers", Image: "gpunotes:test", Workers: 2, Token: "s3cret",
		CPU: "4", Memory: "16Gi", NodeSelector: map[string]string{"gpu": "h100"}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := cs.AppsV1().Deployments("gpunotes").Get(ctx, "nb-workers", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", *d.Spec.Replicas)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if got := strings.Join(c.Args, " "); got != "cuda-worker tcp://gpunotes-scheduler:8786 --name-prefix $(POD_NAME)" {
		t.Errorf("args %q", got)
	}
	if q := c.Resources.Limits[kube.GPUResource]; q.Value() != 1 {
		t.Errorf("GPU limit %s, want 1", q.String())
	}
	if q := c.Resources.Requests[corev1.ResourceMemory]; q.String() != "16Gi" {
		t.Errorf("memory request %s", q.String())
	}
	if d.Spec.Template.Spec.NodeSelector["gpu"] != "h100" {
		t.Errorf("node selector %v", d.Spec.Template.Spec.NodeSelector)
	}
	sec, err := cs.CoreV1().Secrets("gpunotes").Get(ctx, "gpunotes-token", metav1.GetOptions{})
	if err != nil || string(sec.Data["token"]) != "s3cret" {
		t.Fatalf("token Secret: %v %v", sec, err)
	}

	if err := k.ScaleContext(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if n, err := k.Replicas(ctx); err != nil || n != 5 {
		t.Fatalf("after Scale(5): %d replicas (%v)", n, err)
	}
	if err := k.ScaleContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n, _ := k.Replicas(ctx); n != 1 {
		t.Fatalf("after Scale(1): %d replicas", n)
	}
	if err := k.ScaleContext(ctx, -1); err == nil {
		t.Error("Scale(-1): no error")
	}

	// Pods are made by the Deployment controller, which the fake clientset lacks: add them.
	for _, p := range []*corev1.Pod{
		workerPod("nb-workers-a", "nb-workers", corev1.PodRunning, true, ""),
		workerPod("nb-workers-b", "nb-workers", corev1.PodPending, false, "Unschedulable"),
		workerPod("other-c", "other", corev1.PodRunning, true, ""),
	} {
		if _, err := cs.CoreV1().Pods("gpunotes").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := k.Pods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 2 || pods[0].Name != "nb-workers-a" || !pods[0].Ready || pods[0].Node != "gpu-node-1" ||
		pods[1].Phase != "Pending" || !strings.HasPrefix(pods[1].Reason, "Unschedulable: 0/3 nodes") {
		t.Fatalf("pods %+v", pods)
	}
	html := k.HTML()
	for _, want := range []string{"gpunotes/nb-workers", "tcp://gpunotes-scheduler:8786", "nb-workers-a", "gpu-node-1", "Unschedulable", "Replicas"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q:\n%s", want, html)
		}
	}
	if strings.Contains(html, "other-c") {
		t.Error("HTML shows a pod of another cluster")
	}
	if err := k.WaitForPods(ctx, 1); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel()
	err = k.WaitForPods(wctx, 2)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 worker pods ready") || !strings.Contains(err.Error(), "nb-workers-b Pending (Unschedulable") {
		t.Fatalf("WaitForPods(2): %v", err)
	}

	if err := k.CloseContext(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().Deployments("gpunotes").Get(ctx, "nb-workers", metav1.GetOptions{}); err == nil {
		t.Error("the Deployment survived Close")
	}
	if _, err := cs.CoreV1().Secrets("gpunotes").Get(ctx, "gpunotes-token", metav1.GetOptions{}); err == nil {
		t.Error("the Secret New created survived Close")
	}
	if err := k.ScaleContext(ctx, 2); err == nil {
		t.Error("Scale after Close: no error")
	}
}

func TestExistingSecretIsKept(t *testing.T) {
	ctx := context.Background()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "gpunotes-token", Namespace: "gpunotes"}, Data: map[string][]byte{"token": []byte("t0k")}}
	cs := fake.NewClientset(sec)
	k, err := kube.New(ctx, cs, kube.Options{Image: "gpunotes:test", Workers: 1, GPUsPerWorker: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(k.Name(), "gpunotes-workers-") {
		t.Errorf("default name %q", k.Name())
	}
	d, _ := cs.AppsV1().Deployments("gpunotes").Get(ctx, k.Name(), metav1.GetOptions{})
	c := d.Spec.Template.Spec.Containers[0]
	if _, ok := c.Resources.Limits[kube.GPUResource]; ok || c.Args[len(c.Args)-1] != "--cpu" {
		t.Errorf("CPU workers: limits %v args %v", c.Resources.Limits, c.Args)
	}
	if err := k.CloseContext(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("gpunotes").Get(ctx, "gpunotes-token", metav1.GetOptions{}); err != nil {
		t.Errorf("Close deleted a Secret it did not create: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		objs []*corev1.Secret
		opts kube.Options
		want string
	}{
		{"no image", nil, kube.Options{Token: "x"}, "Options.Image is required"},
		{"no secret, no token", nil, kube.Options{Image: "i"}, "Secret gpunotes/gpunotes-token not found"},
		{"secret without key", []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: "gpunotes-token", Namespace: "gpunotes"}}},
			kube.Options{Image: "i"}, `has no key "token"`},
		{"another token", []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: "gpunotes-token", Namespace: "gpunotes"}, Data: map[string][]byte{"token": []byte("a")}}},
			kube.Options{Image: "i", Token: "b"}, "holds another token"},
		{"bad memory", nil, kube.Options{Image: "i", Token: "x", Memory: "lots"}, `memory "lots"`},
		{"negative workers", nil, kube.Options{Image: "i", Token: "x", Workers: -2}, "must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			for _, s := range tc.objs {
				if _, err := cs.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			_, err := kube.New(ctx, cs, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if tc.opts.Token != "" && tc.objs == nil {
				if _, err := cs.CoreV1().Secrets("gpunotes").Get(ctx, "gpunotes-token", metav1.GetOptions{}); err == nil {
					t.Error("a failed New left its Secret behind")
				}
			}
		})
	}
	// A Deployment of that name already exists.
	cs := fake.NewClientset()
	if _, err := kube.New(ctx, cs, kube.Options{Name: "w", Image: "i", Token: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.New(ctx, cs, kube.Options{Name: "w", Image: "i", Token: "x"}); err == nil || !strings.Contains(err.Error(), "create Deployment gpunotes/w") {
		t.Fatalf("second New of the same name: %v", err)
	}
}

// TestTLSSecretMounted checks that Options.TLSSecret mounts the Secret read-only in worker
// pods and passes its files to cuda-worker.
func TestTLSSecretMounted(t *testing.T) {
	d, err := kube.WorkerDeployment(kube.Options{Name: "w", Image: "gpunotes:test", TLSSecret: "gpunotes-tls"})
	if err != nil {
		t.Fatal(err)
	}
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	want := "--tls-cert " + kube.TLSMountPath + "/tls.crt --tls-key " + kube.TLSMountPath + "/tls.key --tls-ca " + kube.TLSMountPath + "/ca.crt"
	if !strings.Contains(strings.Join(c.Args, " "), want) {
		t.Errorf("args %q lack %q", c.Args, want)
	}
	if len(spec.Volumes) != 1 || spec.Volumes[0].Secret == nil || spec.Volumes[0].Secret.SecretName != "gpunotes-tls" {
		t.Fatalf("volumes %+v", spec.Volumes)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != spec.Volumes[0].Name || c.VolumeMounts[0].MountPath != kube.TLSMountPath || !c.VolumeMounts[0].ReadOnly {
		t.Fatalf("mounts %+v", c.VolumeMounts)
	}
	plain, err := kube.WorkerDeployment(kube.Options{Name: "w", Image: "gpunotes:test"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(plain.Spec.Template.Spec.Containers[0].Args, " "), "--tls") || len(plain.Spec.Template.Spec.Volumes) != 0 {
		t.Error("TLS flags or volumes without TLSSecret")
	}
}
