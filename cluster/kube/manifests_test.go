package kube_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/gpunotes/gpunotes/cluster/kube"
)

const manifestDir = "../../deploy/kubernetes"

// decodeManifests decodes every document of every YAML file in deploy/kubernetes strictly
// (unknown or duplicate fields are errors) into the k8s.io/api types.
func decodeManifests(t *testing.T) map[string]runtime.Object {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(manifestDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", manifestDir, err)
	}
	ser := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
		kjson.SerializerOptions{Yaml: true, Strict: true})
	out := map[string]runtime.Object{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")) == "" {
				continue
			}
			obj, gvk, err := ser.Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Fatalf("%s document %d: %v", filepath.Base(f), i, err)
			}
			key := gvk.Kind + "/" + obj.(interface{ GetName() string }).GetName()
			if _, dup := out[key]; dup {
				t.Fatalf("%s declared twice", key)
			}
			out[key] = obj
		}
	}
	return out
}

func TestManifestsDecodeStrictly(t *testing.T) {
	objs := decodeManifests(t)
	for _, want := range []string{"Namespace/gpunotes", "Deployment/gpunotes-scheduler", "Service/gpunotes-scheduler",
		"Deployment/gpunotes-workers", "ServiceAccount/gpunotes-notebook", "Role/gpunotes-notebook", "RoleBinding/gpunotes-notebook"} {
		if objs[want] == nil {
			t.Errorf("manifests lack %s", want)
		}
	}
	for k, o := range objs {
		if ns := o.(interface{ GetNamespace() string }).GetNamespace(); !strings.HasPrefix(k, "Namespace/") && ns != "gpunotes" {
			t.Errorf("%s is in namespace %q, want gpunotes", k, ns)
		}
	}
}

func TestManifestRejectsUnknownField(t *testing.T) {
	ser := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
		kjson.SerializerOptions{Yaml: true, Strict: true})
	bad := "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  prots: []\n"
	if _, _, err := ser.Decode([]byte(bad), nil, nil); err == nil || !runtime.IsStrictDecodingError(err) {
		t.Fatalf("a misspelt field decoded without a strict error: %v", err)
	}
}

func tokenFromSecret(t *testing.T, what string, c corev1.Container) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == "GPUNOTES_CLUSTER_TOKEN" {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
				e.ValueFrom.SecretKeyRef.Name != "gpunotes-token" || e.ValueFrom.SecretKeyRef.Key != "token" {
				t.Errorf("%s: GPUNOTES_CLUSTER_TOKEN does not come from Secret gpunotes-token, key token: %+v", what, e)
			}
			return
		}
	}
	t.Errorf("%s: no GPUNOTES_CLUSTER_TOKEN", what)
}

func selectsTemplate(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("Deployment %s: selector %s=%s does not match its pod template %v", d.Name, k, v, d.Spec.Template.Labels)
		}
	}
}

func TestManifestsFitTogether(t *testing.T) {
	objs := decodeManifests(t)
	sched := objs["Deployment/gpunotes-scheduler"].(*appsv1.Deployment)
	svc := objs["Service/gpunotes-scheduler"].(*corev1.Service)
	workers := objs["Deployment/gpunotes-workers"].(*appsv1.Deployment)
	role := objs["Role/gpunotes-notebook"].(*rbacv1.Role)
	selectsTemplate(t, sched)
	selectsTemplate(t, workers)

	sc := sched.Spec.Template.Spec.Containers[0]
	tokenFromSecret(t, "scheduler", sc)
	if strings.Join(sc.Args[:3], " ") != "scheduler --listen 0.0.0.0:8786" {
		t.Errorf("scheduler args %v", sc.Args)
	}
	for k, v := range svc.Spec.Selector {
		if sched.Spec.Template.Labels[k] != v {
			t.Errorf("Service selector %s=%s misses the scheduler pods", k, v)
		}
	}
	ports := map[string]int32{}
	for _, p := range sc.Ports {
		ports[p.Name] = p.ContainerPort
	}
	// TLS: the scheduler mounts the Secret the workers mount and requires TLS with its files.
	tlsFromSecret(t, "scheduler", sched.Spec.Template.Spec, "--tls-cert", "--tls-key", "--tls-ca")
	tlsFromSecret(t, "worker", workers.Spec.Template.Spec, "--tls-cert", "--tls-key", "--tls-ca")
	if ports["scheduler"] != 8786 || ports["dashboard"] != 8787 {
		t.Errorf("scheduler container ports %v", ports)
	}
	var svcPort int32
	for _, p := range svc.Spec.Ports {
		if ports[p.TargetPort.String()] == 0 {
			t.Errorf("Service port %s targets %s, which the scheduler does not declare", p.Name, p.TargetPort.String())
		}
		if p.Name == "scheduler" {
			svcPort = p.Port
		}
	}

	wc := workers.Spec.Template.Spec.Containers[0]
	tokenFromSecret(t, "worker", wc)
	if want := "tcp://" + svc.Name + ":" + itoa(svcPort); len(wc.Args) < 2 || wc.Args[0] != "cuda-worker" || wc.Args[1] != want {
		t.Errorf("worker args %v, want cuda-worker %s", wc.Args, want)
	}
	if q := wc.Resources.Limits[kube.GPUResource]; q.Value() != 1 {
		t.Errorf("worker pods ask for nvidia.com/gpu %v, want 1", q.String())
	}
	if wc.Image != sc.Image {
		t.Errorf("worker image %q, scheduler image %q", wc.Image, sc.Image)
	}

	// The manifest's worker pod template is what kube.New creates.
	built, err := kube.WorkerDeployment(kube.Options{Name: "gpunotes-workers", Image: wc.Image, Workers: int(*workers.Spec.Replicas),
		TLSSecret: "gpunotes-tls"})
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(built.Spec, workers.Spec) || !equality.Semantic.DeepEqual(built.Labels, workers.Labels) {
		t.Errorf("workers.yaml differs from kube.WorkerDeployment:\nmanifest %+v\nbuilt    %+v", workers.Spec, built.Spec)
	}

	// The notebook's Role allows what kube.New, Scale, Restart, RestartWorkers, Pods and Close do.
	allowed := map[string]bool{}
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				allowed[res+":"+v] = true
			}
		}
	}
	for _, need := range []string{"deployments:create", "deployments:get", "deployments:update", "deployments:delete",
		"pods:list", "pods:delete", "secrets:get", "secrets:create", "secrets:delete"} {
		if !allowed[need] {
			t.Errorf("Role gpunotes-notebook does not allow %s", need)
		}
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// tlsFromSecret checks that the pod mounts Secret gpunotes-tls read-only at kube.TLSMountPath
// and that its container passes files from there with each of flags.
func tlsFromSecret(t *testing.T, who string, spec corev1.PodSpec, flags ...string) {
	t.Helper()
	vol := ""
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "gpunotes-tls" {
			vol = v.Name
		}
	}
	c := spec.Containers[0]
	mounted := false
	for _, m := range c.VolumeMounts {
		if vol != "" && m.Name == vol && m.MountPath == kube.TLSMountPath && m.ReadOnly {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("%s: Secret gpunotes-tls is not mounted read-only at %s (volumes %+v, mounts %+v)", who, kube.TLSMountPath, spec.Volumes, c.VolumeMounts)
	}
	for _, f := range flags {
		ok := false
		for i, a := range c.Args {
			if a == f && i+1 < len(c.Args) && strings.HasPrefix(c.Args[i+1], kube.TLSMountPath+"/") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s args %v lack %s %s/…", who, c.Args, f, kube.TLSMountPath)
		}
	}
}
