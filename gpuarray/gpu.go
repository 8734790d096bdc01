package gpuarray

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// GPUInfo describes one NVIDIA GPU visible to this process (CUDA_VISIBLE_DEVICES applies).
type GPUInfo struct {
	Index       int
	Name        string
	UUID        string
	Memory      uint64 // bytes
	Compute     string // compute capability, e.g. "9.0"
	SMs         int
	Description string
}

// GPUs lists the visible NVIDIA GPUs; it returns none on machines without a driver.
func GPUs() []GPUInfo {
	devs, err := cuda.Devices()
	if err != nil {
		return nil
	}
	out := make([]GPUInfo, len(devs))
	for i, d := range devs {
		out[i] = GPUInfo{Index: d.Index, Name: d.Name, UUID: d.UUID, Memory: d.TotalMem,
			Compute: fmt.Sprintf("%d.%d", d.Major, d.Minor), SMs: d.SMs,
			Description: fmt.Sprintf("GPU %d: %s, %.1f GiB, compute %d.%d, %d SMs", d.Index, d.Name, float64(d.TotalMem)/(1<<30), d.Major, d.Minor, d.SMs)}
	}
	return out
}

// GPUError explains why the GPU backend is unavailable, or returns nil when a GPU can be used.
func GPUError() error {
	devs, err := cuda.Devices()
	if err != nil {
		return err
	}
	if len(devs) == 0 {
		return errors.New("no NVIDIA GPU is visible")
	}
	return nil
}

// gpuScheduler returns the scheduler of the GPU backend for devs (none: all visible GPUs).
func gpuScheduler(devs []int) (Scheduler, error) {
	if len(devs) == 0 {
		all, err := cuda.Devices()
		if err != nil {
			return nil, fmt.Errorf("gpuarray: %w", err)
		}
		if len(all) == 0 {
			return nil, errors.New("gpuarray: no NVIDIA GPU is visible")
		}
		for _, d := range all {
			devs = append(devs, d.Index)
		}
	}
	s := &gpuSched{}
	for _, i := range devs {
		d, err := cuda.Open(i)
		if err != nil {
			return nil, fmt.Errorf("gpuarray: %w", err)
		}
		s.devs = append(s.devs, d)
	}
	return s, nil
}

// gpuSched runs each group of tasks that share a kernel as fused GPU launches spread over its
// devices. A kernel the GPU code generator does not express runs on the CPU executor instead,
// never silently: the scheduler warns on stderr (the cell shows it) and records the part, the
// reason and the time in host, which the computed array's Path reports.
type gpuSched struct {
	devs []*cuda.Device

	mu      sync.Mutex
	sources map[plan.Held]heldSource // persisted chunks read in place (several GPUs)
	host    []string                 // parts that ran on the host, with reason and time
	libs    []string                 // library calls that ran on the GPUs ("solve on cuSOLVER")
}

// path describes where the computation ran, for Array.Path.
func (s *gpuSched) path() string {
	var b strings.Builder
	for i, d := range s.devs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "gpu %d %s", d.Info.Index, d.Info.Name)
	}
	b.WriteString(" (fused kernels)")
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.libs {
		b.WriteString("; ")
		b.WriteString(l)
	}
	for _, h := range s.host {
		b.WriteString("; ")
		b.WriteString(h)
	}
	return b.String()
}

// hostStep records a part of the computation that ran on the host, for Path, and warns on
// stderr (a cell shows it).
func (s *gpuSched) hostStep(msg string) {
	fmt.Fprintf(os.Stderr, "gpuarray warning: %s\n", msg)
	s.mu.Lock()
	s.host = append(s.host, msg)
	s.mu.Unlock()
}

// planSteps records the host steps of planning stage st (begun at t0) for a GPU: takes or
// masks gathered on the host, and a search's sorted array read into host memory because the
// GPU holds it in several chunks.
func (s *gpuSched) planSteps(st *plan.Stage, t0 time.Time) {
	if st.Gathered || cuda.HostGathers(st) {
		s.hostStep(fmt.Sprintf("host gather: the take or mask that the %s reads was gathered on the host in %.3g s", describeKernel(st.Kernel), time.Since(t0).Seconds()))
	}
	if st.WholeOnHost {
		s.hostStep(fmt.Sprintf("host read: the sorted array that the %s searches is held on the GPU in several chunks, so it was read into host memory (%.3g s) and is copied back with the tasks; persist it in one chunk to have it read in place", describeKernel(st.Kernel), time.Since(t0).Seconds()))
	}
	s.hostReads(st, t0)
}

// hostReads records, for Path, each array held on a GPU that the tasks of st read from host
// memory instead of where it is held (plan.Stage.HostReads): its values went down to the
// host (once, kept there) and go up again with the tasks.
func (s *gpuSched) hostReads(st *plan.Stage, t0 time.Time) {
	for _, n := range st.HostOperands {
		if _, ok := n.Buf.(onDevice); ok {
			s.hostStep(fmt.Sprintf("host read: the %s array held on %s that the %s reads was read into host memory (%.3g s) and is copied to the GPU with the tasks: a call's further operands (a product's b, a solve's right-hand sides) are read where a GPU holds them only when they are floats and the computation runs on that GPU alone",
				expr.ShapeString(n.Shape), n.Buf.Where(), describeKernel(st.Kernel), time.Since(t0).Seconds()))
		}
	}
	for _, r := range st.ReshapeReads {
		n := r.Reshape.Args[0]
		if _, ok := n.Buf.(onDevice); ok {
			why := r.Why
			if why == "" {
				why = s.whyOnHost(st.Kernel, n)
			}
			s.hostStep(fmt.Sprintf("host read: the %s array held on %s that the %s reads through a reshape to %s was read into host memory (%.3g s) and is copied back with the tasks: %s",
				expr.ShapeString(n.Shape), n.Buf.Where(), describeKernel(st.Kernel), expr.ShapeString(r.Reshape.Shape), time.Since(t0).Seconds(), why))
		}
	}
	for _, n := range st.HostReads {
		if _, ok := n.Buf.(onDevice); !ok {
			continue // held on the host or on cluster workers: no GPU's memory to read
		}
		s.hostStep(fmt.Sprintf("host read: the %s array held on %s that the %s reads was read into host memory (%.3g s) and is copied back with the tasks: %s",
			expr.ShapeString(n.Shape), n.Buf.Where(), describeKernel(st.Kernel), time.Since(t0).Seconds(), s.whyOnHost(st.Kernel, n)))
	}
}

// whyOnHost says why the tasks of kernel k read n, held on a GPU, from host memory (heldOn
// refused their blocks).
func (s *gpuSched) whyOnHost(k *plan.Kernel, n *expr.Node) string {
	switch {
	case k.Call != nil && cuda.Lowers(k) == nil && !readsHeldInPlace(k):
		return fmt.Sprintf("%s reads %v values from host memory", cuda.CallLibrary(k.Call.Fn), k.Instrs[k.Result].DType)
	case !readsHeldInPlace(k):
		return fmt.Sprintf("the GPU runs the %s from host memory", describeKernel(k))
	}
	switch b := n.Buf.(type) {
	case *gpuChunks:
		for _, d := range b.devs {
			if !slices.Contains(s.devs, d) {
				return fmt.Sprintf("part of it is held on gpu %d, which this computation does not run on", d.Info.Index)
			}
		}
	case *deviceBuffer:
		if len(s.devs) != 1 || s.devs[0] != b.dev {
			return fmt.Sprintf("a result kept on %s is read in place by computations on that GPU alone", b.Where())
		}
		return "a task's block lies outside its row panels"
	}
	return "a task's block spans chunks held on several GPUs, which are joined on one GPU only when that GPU holds them all; persist it in the chunks this step reads (one chunk along a sort's, transform's or matrix function's axes) to have it read in place"
}

// tripStep records, for Path, a call whose fused values the GPU copies to host memory and
// uploads again before its library reads them (cuda.HostTrip), with the reason and the time of
// the stage begun at t0, trip included.
func (s *gpuSched) tripStep(tasks []*plan.Task, t0 time.Time) {
	if why := cuda.HostTrip(tasks); why != "" {
		s.hostStep(fmt.Sprintf("host trip: the values that the %s reads were copied from the GPU to host memory and back (the stage took %.3g s): %s", describeKernel(tasks[0].Kernel), time.Since(t0).Seconds(), why))
	}
}

// libStep records, once, a step that is no fallback, for Path: a library call that ran on the
// GPUs, or host work every backend does (listing a mask's positions).
func (s *gpuSched) libStep(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.libs, msg) {
		s.libs = append(s.libs, msg)
	}
}

// describeKernel names a kernel for a user: what it computes and over which space.
func describeKernel(k *plan.Kernel) string {
	what := "elementwise kernel"
	switch {
	case k.Reduce != nil:
		what = fmt.Sprintf("%v over axes %v", k.Reduce.Red, k.Reduce.Axes)
	case k.Call != nil:
		what = k.Call.Fn.String()
	}
	return fmt.Sprintf("%s of shape %s", what, expr.ShapeString(k.Shape))
}

// gpuBatches is how many pieces a group is cut into, so progress moves while the GPUs work.
const gpuBatches = 10

func (s *gpuSched) Run(ctx context.Context, tasks []*plan.Task, done func(int)) ([]*plan.Output, error) {
	outs := make([]*plan.Output, len(tasks))
	// The tasks of one kernel run as one group even where other kernels' tasks sit between
	// them: a join along an inner axis alternates its pieces' kernels in chunk order.
	var kernels []*plan.Kernel
	groups := map[*plan.Kernel][]int{}
	for i, t := range tasks {
		if _, ok := groups[t.Kernel]; !ok {
			kernels = append(kernels, t.Kernel)
		}
		groups[t.Kernel] = append(groups[t.Kernel], i)
	}
	for _, k := range kernels {
		idx := groups[k]
		ts := make([]*plan.Task, len(idx))
		part := make([]*plan.Output, len(idx))
		for j, i := range idx {
			ts[j] = tasks[i]
		}
		if err := s.runGroup(ctx, ts, part, done); err != nil {
			return nil, err
		}
		for j, i := range idx {
			outs[i] = part[j]
		}
	}
	return outs, nil
}

func (s *gpuSched) runGroup(ctx context.Context, tasks []*plan.Task, outs []*plan.Output, done func(int)) error {
	if err := cuda.Runs(tasks[0].Kernel); err != nil {
		t0 := time.Now()
		defer func() {
			s.hostStep(fmt.Sprintf("host fallback: %s ran on the CPU in %.3g s (%v)", describeKernel(tasks[0].Kernel), time.Since(t0).Seconds(), err))
		}()
		for i, t := range tasks {
			o, err := cpu.Execute(ctx, t)
			if err != nil {
				return fmt.Errorf("chunk %d at %v: %w", t.Index, t.Offset, err)
			}
			outs[i] = o
			done(1)
		}
		return nil
	}
	if c := tasks[0].Kernel.Call; c != nil {
		s.libStep(fmt.Sprintf("%v on %s", c.Fn, cuda.CallLibrary(c.Fn)))
		defer s.tripStep(tasks, time.Now()) // after the run, with its cost
	}
	if len(s.devs) > 1 && plan.ReadsHeld(tasks) {
		// Tasks reading chunks held on a GPU run on that GPU (with peerCopy, the GPUs at once).
		groups, copies, err := s.splitByDevice(ctx, tasks)
		defer copies.free()
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		errs := make(chan error, len(groups))
		for dev, idx := range groups {
			devs := s.devs
			if dev >= 0 {
				devs = nil
				for _, d := range s.devs {
					if d.Info.Index == dev {
						devs = []*cuda.Device{d}
					}
				}
			}
			sub := make([]*plan.Task, len(idx))
			for j, i := range idx {
				sub[j] = tasks[i]
			}
			run := func() {
				o, err := cuda.RunPlan(ctx, devs, sub)
				if err != nil {
					errs <- err
					return
				}
				for j, i := range idx {
					outs[i] = o[j]
				}
				done(len(idx))
			}
			if !peerCopy {
				if run(); len(errs) > 0 {
					break
				}
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				run()
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs // nil when every group ran
	}
	step := max((len(tasks)+gpuBatches-1)/gpuBatches, 64*len(s.devs))
	for lo := 0; lo < len(tasks); lo += step {
		hi := min(lo+step, len(tasks))
		o, err := cuda.RunPlan(ctx, s.devs, tasks[lo:hi])
		if err != nil {
			return err
		}
		copy(outs[lo:hi], o)
		done(hi - lo)
	}
	return nil
}
