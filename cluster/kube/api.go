package kube

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/display"
)

var _ cluster.Cluster = (*Cluster)(nil)

// ErrNotConnected is why a method served by the scheduler fails before Connect.
var ErrNotConnected = errors.New("kube: not connected to the scheduler: call Connect(ctx, addr) first " +
	"(the workers' results, logs and datasets are the scheduler's; the Kubernetes API only places pods)")

// RestartedAtAnnotation is the pod template annotation Restart sets, as `kubectl rollout
// restart` does.
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// Client is the client of the last Connect, or nil.
func (c *Cluster) Client() *cluster.Client { return c.client }

func (c *Cluster) connected(what string) (*cluster.Client, error) {
	if c.client == nil {
		return nil, fmt.Errorf("kube: %s: %w", what, ErrNotConnected)
	}
	return c.client, nil
}

// Adapt is an error on a Kubernetes cluster: this process does not watch the scheduler's
// queue to resize the Deployment. Scale(n) sets its replicas; a HorizontalPodAutoscaler on
// the Deployment resizes it from Kubernetes.
func (c *Cluster) Adapt(min, max int) error {
	return fmt.Errorf("kube: Adapt(%d, %d): not supported on Kubernetes: nothing here resizes the Deployment %s/%s "+
		"as tasks wait; use Scale(n), or a HorizontalPodAutoscaler on that Deployment", min, max, c.opts.Namespace, c.opts.Name)
}

// WaitForWorkers waits until n workers have joined the scheduler, at most timeout (0: the
// running cell's context bounds it), through the client of Connect. WaitForPods waits for
// the pods instead and says why those not ready are not.
func (c *Cluster) WaitForWorkers(n int, timeout time.Duration) error {
	cl, err := c.connected("WaitForWorkers")
	if err != nil {
		return err
	}
	return cl.WaitForWorkers(n, timeout)
}

// RetireWorkers is an error on a Kubernetes cluster: a retired worker's container is
// restarted by its pod, and on scale-down the Deployment's ReplicaSet, not this process,
// picks which pods to delete, so the named workers cannot be the ones removed. Scale(n)
// removes pods.
func (c *Cluster) RetireWorkers(names ...string) error {
	return fmt.Errorf("kube: RetireWorkers(%v): not supported on Kubernetes: the pod restarts a retired worker and "+
		"the ReplicaSet of %s/%s picks which pods a scale-down deletes; use Scale(n)", names, c.opts.Namespace, c.opts.Name)
}

// Restart replaces every worker pod with a fresh one, as `kubectl rollout restart`: it sets
// RestartedAtAnnotation on the Deployment's pod template and the Deployment rolls the pods.
// It returns once the Deployment is updated, not when the new pods are ready (WaitForPods).
func (c *Cluster) Restart() error {
	ctx := display.Context()
	deps := c.cs.AppsV1().Deployments(c.opts.Namespace)
	for attempt := 0; ; attempt++ {
		d, err := deps.Get(ctx, c.opts.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("kube: restart %s/%s: %w", c.opts.Namespace, c.opts.Name, err)
		}
		if d.Spec.Template.Annotations == nil {
			d.Spec.Template.Annotations = map[string]string{}
		}
		d.Spec.Template.Annotations[RestartedAtAnnotation] = time.Now().Format(time.RFC3339Nano)
		_, err = deps.Update(ctx, d, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt >= 5 {
			return fmt.Errorf("kube: restart %s/%s: %w", c.opts.Namespace, c.opts.Name, err)
		}
	}
}

// RestartWorkers deletes the pods of the named workers (a worker is named after its pod:
// POD-gpuN, or the pod's name itself); the Deployment starts fresh pods in their place. A pod
// running several workers restarts them all.
func (c *Cluster) RestartWorkers(names ...string) error {
	ctx := display.Context()
	pods, err := c.Pods(ctx)
	if err != nil {
		return err
	}
	victims := map[string]bool{}
	var unknown []string
	for _, n := range names {
		found := false
		for _, p := range pods {
			if n == p.Name || strings.HasPrefix(n, p.Name+"-") {
				victims[p.Name], found = true, true
				break
			}
		}
		if !found {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("kube: RestartWorkers: no worker pod of %s/%s runs %s", c.opts.Namespace, c.opts.Name, strings.Join(unknown, ", "))
	}
	var del []string
	for p := range victims {
		del = append(del, p)
	}
	sort.Strings(del)
	for _, p := range del {
		if err := c.cs.CoreV1().Pods(c.opts.Namespace).Delete(ctx, p, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("kube: RestartWorkers: delete pod %s/%s: %w", c.opts.Namespace, p, err)
		}
	}
	return nil
}

// RunOnWorkers runs fn on every worker, through the client of Connect (Client.RunOnWorkers).
func (c *Cluster) RunOnWorkers(fn any, args ...any) (map[string]any, error) {
	cl, err := c.connected("RunOnWorkers")
	if err != nil {
		return nil, err
	}
	return cl.RunOnWorkers(fn, args...)
}

// RunOnScheduler runs fn on the scheduler, through the client of Connect.
func (c *Cluster) RunOnScheduler(fn any, args ...any) (any, error) {
	cl, err := c.connected("RunOnScheduler")
	if err != nil {
		return nil, err
	}
	return cl.RunOnScheduler(fn, args...)
}

// WhoHas maps keys to the workers holding them, through the client of Connect.
func (c *Cluster) WhoHas(xs ...any) (map[string][]string, error) {
	cl, err := c.connected("WhoHas")
	if err != nil {
		return nil, err
	}
	return cl.WhoHas(xs...)
}

// HasWhat maps workers to the keys they hold, through the client of Connect.
func (c *Cluster) HasWhat() (map[string][]string, error) {
	cl, err := c.connected("HasWhat")
	if err != nil {
		return nil, err
	}
	return cl.HasWhat()
}

// Rebalance evens out held bytes across workers, through the client of Connect.
func (c *Cluster) Rebalance() error {
	cl, err := c.connected("Rebalance")
	if err != nil {
		return err
	}
	return cl.Rebalance()
}

// Replicate copies the results of x to n workers, through the client of Connect.
func (c *Cluster) Replicate(x any, n int) error {
	cl, err := c.connected("Replicate")
	if err != nil {
		return err
	}
	return cl.Replicate(x, n)
}

// Publish names x on the scheduler, through the client of Connect.
func (c *Cluster) Publish(name string, x any) error {
	cl, err := c.connected("Publish")
	if err != nil {
		return err
	}
	return cl.Publish(name, x)
}

// Datasets lists the published names, through the client of Connect.
func (c *Cluster) Datasets() ([]string, error) {
	cl, err := c.connected("Datasets")
	if err != nil {
		return nil, err
	}
	return cl.Datasets()
}

// GetDataset returns a published dataset, through the client of Connect.
func (c *Cluster) GetDataset(name string) (any, error) {
	cl, err := c.connected("GetDataset")
	if err != nil {
		return nil, err
	}
	return cl.GetDataset(name)
}

// GetTaskStream returns the tasks since a time, through the client of Connect.
func (c *Cluster) GetTaskStream(since time.Time) (*cluster.TaskStream, error) {
	cl, err := c.connected("GetTaskStream")
	if err != nil {
		return nil, err
	}
	return cl.GetTaskStream(since)
}

// WorkerLogs returns the last n lines of each worker's log, through the client of Connect.
func (c *Cluster) WorkerLogs(n int) (map[string][]string, error) {
	cl, err := c.connected("WorkerLogs")
	if err != nil {
		return nil, err
	}
	return cl.WorkerLogs(n)
}
