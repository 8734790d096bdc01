package cluster

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// Cluster is the one shape of every kind of cluster: a LocalCUDA, a client of a standalone
// scheduler (Connect), and the SLURM and Kubernetes clusters' clients. Where a kind cannot do
// a thing (a client of a standalone scheduler does not start workers), the method returns an
// error saying why and what does.
type Cluster interface {
	Scale(n int) error
	Adapt(min, max int) error
	WaitForWorkers(n int, timeout time.Duration) error
	RetireWorkers(names ...string) error
	Restart() error
	RestartWorkers(names ...string) error
	RunOnWorkers(fn any, args ...any) (map[string]any, error)
	RunOnScheduler(fn any, args ...any) (any, error)
	WhoHas(xs ...any) (map[string][]string, error)
	HasWhat() (map[string][]string, error)
	Rebalance() error
	Replicate(x any, n int) error
	Publish(name string, x any) error
	Datasets() ([]string, error)
	GetDataset(name string) (any, error)
	GetTaskStream(since time.Time) (*TaskStream, error)
	WorkerLogs(n int) (map[string][]string, error)
	Close() error
}

var (
	_ Cluster = (*LocalCUDA)(nil)
	_ Cluster = (*Client)(nil)
)

// errNotStarter is why a client cannot size or restart workers it did not start.
func (c *Client) errNotStarter(what string) error {
	if c.owner != nil {
		return nil
	}
	return fmt.Errorf("cluster: %s: this client is connected to the scheduler at %s, which does not start workers; "+
		"a LocalCUDA does, and so do slurm.Cluster (Scale, Adapt) and kube.Cluster (Scale, Restart); "+
		"for workers started by hand run or stop `gpunotes cuda-worker`", what, c.Address())
}

// Scale on a client of a standalone scheduler is an error: it does not start workers.
func (c *Client) Scale(n int) error {
	if c.owner != nil {
		return c.owner.Scale(n)
	}
	return c.errNotStarter("Scale")
}

// Adapt on a client of a standalone scheduler is an error: it does not start workers.
func (c *Client) Adapt(min, max int) error {
	if c.owner != nil {
		return c.owner.Adapt(min, max)
	}
	return c.errNotStarter("Adapt")
}

// Restart on a client of a standalone scheduler is an error: it cannot restart processes
// it did not start.
func (c *Client) Restart() error {
	if c.owner != nil {
		return c.owner.Restart()
	}
	return c.errNotStarter("Restart")
}

// RestartWorkers on a client of a standalone scheduler is an error, as Restart.
func (c *Client) RestartWorkers(names ...string) error {
	if c.owner != nil {
		return c.owner.RestartWorkers(names...)
	}
	return c.errNotStarter("RestartWorkers")
}

// WaitForWorkers waits until at least n workers are connected, at most timeout (0: the
// running cell's context bounds it).
func (c *Client) WaitForWorkers(n int, timeout time.Duration) error {
	_, err := c.ctlCall(cellContext(), &ctlMsg{Op: "wait_workers", N: n, Timeout: timeout})
	return err
}

// RetireWorkers moves the results the named workers hold (persisted chunks, futures) to the
// others, then stops them, as dask's retire_workers. On a LocalCUDA they are not restarted.
func (c *Client) RetireWorkers(names ...string) error {
	if c.owner != nil {
		return c.owner.RetireWorkers(names...)
	}
	_, err := c.ctlCall(cellContext(), &ctlMsg{Op: "retire", Names: names})
	return err
}

// keysOf turns futures, keys, persisted arrays (persisted with Client.Persist) and slices of
// them into task keys.
func (c *Client) keysOf(xs []any) ([]string, error) {
	var keys []string
	var add func(x any) error
	add = func(x any) error {
		switch v := x.(type) {
		case *Future:
			if v.err != nil {
				return v.err
			}
			keys = append(keys, v.t.key)
		case []*Future:
			for _, f := range v {
				if err := add(f); err != nil {
					return err
				}
			}
		case string:
			keys = append(keys, v)
		case []string:
			keys = append(keys, v...)
		case *gpuarray.Array:
			ks := c.persisted(v)
			if ks == nil {
				return errors.New("an array not persisted with this client's Persist (c.Persist(x)): its chunks are not known here")
			}
			keys = append(keys, ks...)
		case []any:
			for _, y := range v {
				if err := add(y); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("a %T is not a future, a key or a persisted array", x)
		}
		return nil
	}
	for _, x := range xs {
		if err := add(x); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// WhoHas maps the keys of futures, persisted arrays (c.Persist) or key strings to the workers
// holding them, holder first, as dask's who_has. With no arguments: every key held.
func (c *Client) WhoHas(xs ...any) (map[string][]string, error) {
	if len(xs) == 0 {
		hw, err := c.HasWhat()
		if err != nil {
			return nil, err
		}
		var keys []string
		for _, ks := range hw {
			keys = append(keys, ks...)
		}
		xs = []any{keys}
	}
	keys, err := c.keysOf(xs)
	if err != nil {
		return nil, fmt.Errorf("cluster: WhoHas: %w", err)
	}
	r, err := c.ctlCall(cellContext(), &ctlMsg{Op: "who_has", Keys: keys})
	if err != nil {
		return nil, err
	}
	return r.Where, nil
}

// HasWhat maps every worker to the keys of the results it holds, as dask's has_what.
func (c *Client) HasWhat() (map[string][]string, error) {
	r, err := c.ctlCall(cellContext(), &ctlMsg{Op: "has_what"})
	if err != nil {
		return nil, err
	}
	return r.Where, nil
}

// Rebalance moves held results from the workers holding the most bytes to those holding
// the least, as dask's rebalance.
func (c *Client) Rebalance() error {
	_, err := c.ctlCall(cellContext(), &ctlMsg{Op: "rebalance"})
	return err
}

// Replicate copies the results of x (a future, futures, keys, or an array persisted with
// c.Persist) to n workers in all (fewer if the cluster has fewer), so that losing a worker
// costs no recomputation.
func (c *Client) Replicate(x any, n int) error {
	keys, err := c.keysOf([]any{x})
	if err != nil {
		return fmt.Errorf("cluster: Replicate: %w", err)
	}
	_, err = c.ctlCall(cellContext(), &ctlMsg{Op: "replicate", Keys: keys, N: n})
	return err
}

// WorkerLogs returns the last n lines each worker logged (joins, moves, spills, failures of
// functions run on it), by worker name.
func (c *Client) WorkerLogs(n int) (map[string][]string, error) {
	r, err := c.ctlCall(cellContext(), &ctlMsg{Op: "logs", N: n})
	if err != nil {
		return nil, err
	}
	var errs []string
	for _, k := range sortedKeys(r.Errs) {
		errs = append(errs, k+": "+r.Errs[k])
	}
	if len(errs) > 0 {
		return r.Where, fmt.Errorf("cluster: WorkerLogs: %s", strings.Join(errs, "; "))
	}
	return r.Where, nil
}

// persistedArrays maps arrays persisted with Client.Persist to their chunks' keys.
type persistedArrays struct {
	mu      sync.Mutex
	capture *[]string
	byArray map[weak.Pointer[gpuarray.Array]][]string
}

var persistedMu sync.Mutex

// noteKept records keys kept while a Client.Persist runs.
func (c *Client) noteKept(keys []string) {
	c.pa.mu.Lock()
	defer c.pa.mu.Unlock()
	if c.pa.capture != nil {
		*c.pa.capture = append(*c.pa.capture, keys...)
	}
}

func (c *Client) persisted(x *gpuarray.Array) []string {
	c.pa.mu.Lock()
	defer c.pa.mu.Unlock()
	return c.pa.byArray[weak.Make(x)]
}

// persistTracked runs persist and records the keys of the chunks it kept for the result.
func (c *Client) persistTracked(persist func() *gpuarray.Array) *gpuarray.Array {
	persistedMu.Lock()
	defer persistedMu.Unlock()
	var keys []string
	c.pa.mu.Lock()
	c.pa.capture = &keys
	c.pa.mu.Unlock()
	out := persist()
	c.pa.mu.Lock()
	c.pa.capture = nil
	if out != nil && out.Err() == nil && len(keys) > 0 {
		if c.pa.byArray == nil {
			c.pa.byArray = map[weak.Pointer[gpuarray.Array]][]string{}
		}
		sort.Strings(keys)
		wp := weak.Make(out)
		c.pa.byArray[wp] = keys
		pa := c.pa
		runtime.AddCleanup(out, func(k weak.Pointer[gpuarray.Array]) {
			pa.mu.Lock()
			delete(pa.byArray, k)
			pa.mu.Unlock()
		}, wp)
	}
	c.pa.mu.Unlock()
	return out
}
