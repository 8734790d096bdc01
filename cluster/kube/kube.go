package kube

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/display"
)

// Labels every worker pod carries; ClusterLabel's value is the worker Deployment's name.
const (
	AppLabel       = "app.kubernetes.io/name"
	ComponentLabel = "app.kubernetes.io/component"
	ClusterLabel   = "gpunotes.io/cluster"
	// GPUResource is the extended resource of NVIDIA's device plugin.
	GPUResource = corev1.ResourceName("nvidia.com/gpu")
)

// Options configures New.
type Options struct {
	// Namespace of the workers (default "gpunotes", as in deploy/kubernetes).
	Namespace string
	// Name of the worker Deployment (default "gpunotes-workers-" and a random suffix).
	Name string
	// Image holds the gpunotes binary at /usr/local/bin/gpunotes (required).
	Image string
	// ImagePullPolicy of the worker container (default: Kubernetes' default for the tag).
	ImagePullPolicy string
	// Scheduler is the address the pods dial (default "tcp://gpunotes-scheduler:8786", the
	// Service of deploy/kubernetes).
	Scheduler string
	// TokenSecret is the Secret holding the token under TokenKey (default "gpunotes-token" and
	// "token"). When it does not exist and Token is set, New creates it and Close deletes it.
	TokenSecret string
	TokenKey    string
	Token       string
	// Workers is the number of worker pods New asks for.
	Workers int
	// GPUsPerWorker is each pod's nvidia.com/gpu limit (default 1; negative: none, CPU workers).
	GPUsPerWorker int
	// CPU and Memory are each pod's requests and limits ("4", "16Gi"; "": none).
	CPU    string
	Memory string
	// NodeSelector places the pods ("nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3").
	NodeSelector map[string]string
	// WorkerArgs are more arguments of `gpunotes cuda-worker`.
	WorkerArgs []string
	// TLSSecret, when set, is a Secret with the workers' PEM files (tls.crt, tls.key, ca.crt,
	// as deploy/kubernetes uses "gpunotes-tls"), mounted read-only at TLSMountPath; TLS then
	// defaults to those three files.
	TLSSecret string
	// TLS are the paths, inside the worker container, passed to cuda-worker as --tls-cert,
	// --tls-key and --tls-ca (see cluster.TLSFiles).
	TLS cluster.TLSFiles
	// ClientTLS, when set, is what Connect verifies the scheduler with (and presents for
	// mutual TLS): see cluster.ConnectTLS and cluster.TLSFiles.ClientConfig.
	ClientTLS *tls.Config
}

// TLSMountPath is where Options.TLSSecret is mounted in worker pods.
const TLSMountPath = "/etc/gpunotes/tls"

// Cluster is a Deployment of worker pods.
type Cluster struct {
	cs            kubernetes.Interface
	opts          Options
	createdSecret bool
	client        *cluster.Client
}

func (o *Options) defaults() error {
	if o.Image == "" {
		return errors.New("kube: Options.Image is required (an image with the gpunotes binary at /usr/local/bin/gpunotes)")
	}
	if o.Workers < 0 {
		return fmt.Errorf("kube: Workers %d must not be negative", o.Workers)
	}
	if o.Namespace == "" {
		o.Namespace = "gpunotes"
	}
	if o.Name == "" {
		b := make([]byte, 3)
		_, _ = rand.Read(b)
		o.Name = "gpunotes-workers-" + hex.EncodeToString(b)
	}
	if o.Scheduler == "" {
		o.Scheduler = "tcp://gpunotes-scheduler:8786"
	}
	if !strings.HasPrefix(o.Scheduler, "tcp://") {
		o.Scheduler = "tcp://" + o.Scheduler
	}
	if o.TokenSecret == "" {
		o.TokenSecret = "gpunotes-token"
	}
	if o.TokenKey == "" {
		o.TokenKey = "token"
	}
	if o.GPUsPerWorker == 0 {
		o.GPUsPerWorker = 1
	}
	if o.TLSSecret != "" && !o.TLS.Enabled() {
		o.TLS = cluster.TLSFiles{Cert: TLSMountPath + "/tls.crt", Key: TLSMountPath + "/tls.key", CA: TLSMountPath + "/ca.crt"}
	}
	return nil
}

// New creates the worker Deployment (and the token Secret, see Options.TokenSecret) through
// cs. Pods join the scheduler as Kubernetes starts them; WaitForPods waits for them.
func New(ctx context.Context, cs kubernetes.Interface, opts Options) (*Cluster, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	ctx = ctxOr(ctx)
	c := &Cluster{cs: cs, opts: opts}
	d, err := WorkerDeployment(opts)
	if err != nil {
		return nil, err
	}
	if err := c.ensureSecret(ctx); err != nil {
		return nil, err
	}
	if _, err := cs.AppsV1().Deployments(opts.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		_ = c.dropSecret(ctx)
		return nil, fmt.Errorf("kube: create Deployment %s/%s: %w", opts.Namespace, opts.Name, err)
	}
	return c, nil
}

// NewFromConfig is New with the client of the pod's service account inside a cluster, else
// of $KUBECONFIG or ~/.kube/config.
func NewFromConfig(ctx context.Context, opts Options) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kube: load the Kubernetes client configuration: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: Kubernetes client: %w", err)
	}
	return New(ctx, cs, opts)
}

func (c *Cluster) ensureSecret(ctx context.Context) error {
	o := c.opts
	s, err := c.cs.CoreV1().Secrets(o.Namespace).Get(ctx, o.TokenSecret, metav1.GetOptions{})
	switch {
	case err == nil:
		if len(s.Data[o.TokenKey]) == 0 && s.StringData[o.TokenKey] == "" {
			return fmt.Errorf("kube: Secret %s/%s has no key %q", o.Namespace, o.TokenSecret, o.TokenKey)
		}
		if o.Token != "" && string(s.Data[o.TokenKey]) != o.Token && s.StringData[o.TokenKey] != o.Token {
			return fmt.Errorf("kube: Secret %s/%s holds another token than Options.Token: workers would be refused", o.Namespace, o.TokenSecret)
		}
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("kube: read Secret %s/%s: %w", o.Namespace, o.TokenSecret, err)
	case o.Token == "":
		return fmt.Errorf("kube: Secret %s/%s not found: create it (deploy/kubernetes/README.md) or set Options.Token", o.Namespace, o.TokenSecret)
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: o.TokenSecret, Namespace: o.Namespace,
			Labels: map[string]string{AppLabel: "gpunotes", ClusterLabel: o.Name}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{o.TokenKey: []byte(o.Token)},
	}
	if _, err := c.cs.CoreV1().Secrets(o.Namespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kube: create Secret %s/%s: %w", o.Namespace, o.TokenSecret, err)
	}
	c.createdSecret = true
	return nil
}

func (c *Cluster) dropSecret(ctx context.Context) error {
	if !c.createdSecret {
		return nil
	}
	err := c.cs.CoreV1().Secrets(c.opts.Namespace).Delete(ctx, c.opts.TokenSecret, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kube: delete Secret %s/%s: %w", c.opts.Namespace, c.opts.TokenSecret, err)
	}
	c.createdSecret = false
	return nil
}

// WorkerDeployment is the Deployment New creates: opts.Workers pods running `gpunotes
// cuda-worker SCHEDULER --name-prefix POD` with the token from the Secret and
// GPUsPerWorker nvidia.com/gpu each. opts gets the same defaults as in New.
func WorkerDeployment(opts Options) (*appsv1.Deployment, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	res := corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}}
	if opts.GPUsPerWorker > 0 {
		res.Limits[GPUResource] = *resource.NewQuantity(int64(opts.GPUsPerWorker), resource.DecimalSI)
	}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: opts.CPU, corev1.ResourceMemory: opts.Memory} {
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("kube: %s %q: %w", name, v, err)
		}
		res.Limits[name], res.Requests[name] = q, q
	}
	args := []string{"cuda-worker", opts.Scheduler, "--name-prefix", "$(POD_NAME)"}
	if opts.GPUsPerWorker < 0 {
		args = append(args, "--cpu")
	}
	args = append(args, opts.TLS.Args()...)
	args = append(args, opts.WorkerArgs...)
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	if opts.TLSSecret != "" {
		vols = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: opts.TLSSecret}}}}
		mounts = []corev1.VolumeMount{{Name: "tls", MountPath: TLSMountPath, ReadOnly: true}}
	}
	lbl := map[string]string{AppLabel: "gpunotes", ComponentLabel: "worker", ClusterLabel: opts.Name}
	replicas := int32(opts.Workers)
	grace := int64(10)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Namespace: opts.Namespace, Labels: lbl},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{ClusterLabel: opts.Name, ComponentLabel: "worker"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					NodeSelector:                  opts.NodeSelector,
					Volumes:                       vols,
					Containers: []corev1.Container{{
						Name:            "worker",
						Image:           opts.Image,
						ImagePullPolicy: corev1.PullPolicy(opts.ImagePullPolicy),
						Command:         []string{"/usr/local/bin/gpunotes"},
						Args:            args,
						Env: []corev1.EnvVar{
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
							{Name: "GPUNOTES_CLUSTER_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
								LocalObjectReference: corev1.LocalObjectReference{Name: opts.TokenSecret}, Key: opts.TokenKey}}},
						},
						Resources:    res,
						VolumeMounts: mounts,
					}},
				},
			},
		},
	}, nil
}

// Name is the worker Deployment's name.
func (c *Cluster) Name() string { return c.opts.Name }

// Namespace is the workers' namespace.
func (c *Cluster) Namespace() string { return c.opts.Namespace }

// Scale sets the number of worker pods, bounded by the running cell's context.
func (c *Cluster) Scale(n int) error { return c.ScaleContext(display.Context(), n) }

// ScaleContext is Scale bounded by ctx (nil: no bound).
func (c *Cluster) ScaleContext(ctx context.Context, n int) error {
	if n < 0 {
		return fmt.Errorf("kube: Scale(%d): want a number of workers >= 0", n)
	}
	ctx = ctxOr(ctx)
	deps := c.cs.AppsV1().Deployments(c.opts.Namespace)
	for attempt := 0; ; attempt++ {
		d, err := deps.Get(ctx, c.opts.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("kube: scale %s/%s: %w", c.opts.Namespace, c.opts.Name, err)
		}
		r := int32(n)
		d.Spec.Replicas = &r
		_, err = deps.Update(ctx, d, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt >= 5 {
			return fmt.Errorf("kube: scale %s/%s to %d: %w", c.opts.Namespace, c.opts.Name, n, err)
		}
	}
}

// Replicas is the number of worker pods asked for.
func (c *Cluster) Replicas(ctx context.Context) (int, error) {
	d, err := c.cs.AppsV1().Deployments(c.opts.Namespace).Get(ctxOr(ctx), c.opts.Name, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("kube: %s/%s: %w", c.opts.Namespace, c.opts.Name, err)
	}
	if d.Spec.Replicas == nil {
		return 1, nil
	}
	return int(*d.Spec.Replicas), nil
}

// Pod is one worker pod as Kubernetes reports it.
type Pod struct {
	Name   string
	Phase  string // Pending, Running, Succeeded, Failed, Unknown
	Node   string
	Ready  bool
	Reason string // why it waits or ended (Unschedulable, ImagePullBackOff, …) or ""
}

// Pods lists the worker pods, sorted by name.
func (c *Cluster) Pods(ctx context.Context) ([]Pod, error) {
	sel := labels.SelectorFromSet(labels.Set{ClusterLabel: c.opts.Name, ComponentLabel: "worker"}).String()
	list, err := c.cs.CoreV1().Pods(c.opts.Namespace).List(ctxOr(ctx), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("kube: list pods of %s/%s: %w", c.opts.Namespace, c.opts.Name, err)
	}
	out := make([]Pod, 0, len(list.Items))
	for _, p := range list.Items {
		pd := Pod{Name: p.Name, Phase: string(p.Status.Phase), Node: p.Spec.NodeName, Reason: p.Status.Reason}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				pd.Ready = true
			}
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && pd.Reason == "" {
				pd.Reason = cond.Reason
				if cond.Message != "" {
					pd.Reason += ": " + cond.Message
				}
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "" && pd.Reason == "" {
				pd.Reason = w.Reason
			}
			if t := cs.State.Terminated; t != nil && pd.Reason == "" {
				pd.Reason = fmt.Sprintf("%s (exit %d)", t.Reason, t.ExitCode)
			}
		}
		out = append(out, pd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// WaitForPods waits until n worker pods are running and ready; the error names the pods that
// are not, with their phase and reason.
func (c *Cluster) WaitForPods(ctx context.Context, n int) error {
	ctx = ctxOr(ctx)
	for {
		pods, err := c.Pods(ctx)
		if err != nil {
			return err
		}
		ready := 0
		var waiting []string
		for _, p := range pods {
			if p.Ready && p.Phase == string(corev1.PodRunning) {
				ready++
				continue
			}
			s := p.Name + " " + p.Phase
			if p.Reason != "" {
				s += " (" + p.Reason + ")"
			}
			waiting = append(waiting, s)
		}
		if ready >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			what := "no pods"
			if len(waiting) > 0 {
				what = strings.Join(waiting, ", ")
			}
			return fmt.Errorf("kube: %d of %d worker pods ready (%v); not ready: %s", ready, n, ctx.Err(), what)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Connect connects a client to the scheduler at addr (the address the notebook reaches it at,
// which may differ from Options.Scheduler, e.g. through a port-forward) with the token of the
// Secret. Close closes it.
func (c *Cluster) Connect(ctx context.Context, addr string) (*cluster.Client, error) {
	ctx = ctxOr(ctx)
	tok := c.opts.Token
	if tok == "" {
		s, err := c.cs.CoreV1().Secrets(c.opts.Namespace).Get(ctx, c.opts.TokenSecret, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("kube: read the token: %w", err)
		}
		tok = string(s.Data[c.opts.TokenKey])
	}
	cl, err := cluster.ConnectTLSContext(ctx, addr, tok, c.opts.ClientTLS)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	if c.client != nil {
		_ = c.client.Close()
	}
	c.client = cl
	return cl, nil
}

// Close deletes the worker Deployment (its pods with it) and the Secret New created, and
// closes the client of Connect, bounded by the running cell's context.
func (c *Cluster) Close() error { return c.CloseContext(display.Context()) }

// CloseContext is Close bounded by ctx (nil: no bound).
func (c *Cluster) CloseContext(ctx context.Context) error {
	ctx = ctxOr(ctx)
	var errs []error
	if c.client != nil {
		_ = c.client.Close()
		c.client = nil
	}
	fg := metav1.DeletePropagationForeground
	err := c.cs.AppsV1().Deployments(c.opts.Namespace).Delete(ctx, c.opts.Name, metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("kube: delete Deployment %s/%s: %w", c.opts.Namespace, c.opts.Name, err))
	}
	if err := c.dropSecret(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func ctxOr(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
