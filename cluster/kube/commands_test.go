package kube_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/cluster/kube"
	"github.com/gpunotes/gpunotes/internal/testenv"
)

// tlsSecretDir writes tls.crt, tls.key and ca.crt as the Secret gpunotes-tls holds them.
func tlsSecretDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	testenv.WriteSelfSigned(t, d, "tls.crt", "tls.key", "ca.crt", "gpunotes-scheduler")
	return d
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// start runs a manifest container's command here (the image's /usr/local/bin/gpunotes being
// bin), with env, and stops it when the test ends.
func start(t *testing.T, bin string, c corev1.Container, args []string, env []string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	if len(c.Command) != 1 || c.Command[0] != "/usr/local/bin/gpunotes" {
		t.Fatalf("container %s runs %v, want /usr/local/bin/gpunotes", c.Name, c.Command)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The whole group: cuda-worker's worker processes with it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	return cmd, bufio.NewScanner(out)
}

// TestManifestCommandsRunHere runs the scheduler's and the worker's container commands from
// the manifests on this machine (loopback ports instead of the Service), the token in the
// environment as the Secret would put it, and runs a task on the worker: the commands and
// flags the pods would run are ones the binary accepts.
func TestManifestCommandsRunHere(t *testing.T) {
	objs := decodeManifests(t)
	sc := objs["Deployment/gpunotes-scheduler"].(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	wc := objs["Deployment/gpunotes-workers"].(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	bin := testenv.Binary(t)
	token := "manifest-test-token"
	sp, dp := freePort(t), freePort(t)
	// The Secret gpunotes-tls, as its volume would show it: one self-signed certificate for
	// scheduler, workers and client, its own CA.
	tlsDir := tlsSecretDir(t)
	args := strings.NewReplacer("0.0.0.0:8786", "127.0.0.1:"+sp, "0.0.0.0:8787", "127.0.0.1:"+dp, kube.TLSMountPath, tlsDir)
	var sargs []string
	for _, a := range sc.Args {
		sargs = append(sargs, args.Replace(a))
	}
	_, out := start(t, bin, sc, sargs, []string{"GPUNOTES_CLUSTER_TOKEN=" + token})
	if !out.Scan() || !strings.HasPrefix(out.Text(), "scheduler tcp://127.0.0.1:"+sp) {
		t.Fatalf("the scheduler did not start: %q", out.Text())
	}
	go func() {
		for out.Scan() {
		}
	}()

	pod := "gpunotes-workers-7d9f-abcde"
	var wargs []string
	for _, a := range wc.Args {
		a = strings.ReplaceAll(a, "tcp://gpunotes-scheduler:8786", "tcp://127.0.0.1:"+sp)
		a = strings.ReplaceAll(a, kube.TLSMountPath, tlsDir)
		wargs = append(wargs, strings.ReplaceAll(a, "$(POD_NAME)", pod))
	}
	start(t, bin, wc, wargs, []string{"GPUNOTES_CLUSTER_TOKEN=" + token, "POD_NAME=" + pod, "CUDA_VISIBLE_DEVICES="})

	files := cluster.TLSFiles{Cert: filepath.Join(tlsDir, "tls.crt"), Key: filepath.Join(tlsDir, "tls.key"), CA: filepath.Join(tlsDir, "ca.crt")}
	cfg, err := files.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Connect("tcp://127.0.0.1:"+sp, token); err == nil {
		t.Error("the manifest's scheduler accepted a plaintext client")
	}
	c, err := cluster.ConnectTLS("tcp://127.0.0.1:"+sp, token, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for len(c.WorkerInfo()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the worker from workers.yaml did not join within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if w := c.WorkerInfo()[0]; !strings.HasPrefix(w.Name, pod+"-") {
		t.Errorf("worker name %q does not start with the pod's name", w.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := c.Submit(cluster.Source{Code: "func twice(x int) int { return 2 * x }", Func: "twice"}, 21).Result(ctx)
	if err != nil || fmt.Sprint(v) != "42" {
		t.Fatalf("twice(21) on the manifest's worker: %v, %v", v, err)
	}
	if _, err := cluster.ConnectTLS("tcp://127.0.0.1:"+sp, "wrong", cfg); err == nil {
		t.Error("the scheduler accepted a wrong token")
	}
}
