package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/display/widget"
	"github.com/gpunotes/gpunotes/install"
	"github.com/gpunotes/gpunotes/interp"
	"github.com/gpunotes/gpunotes/interp/preload"
	"github.com/gpunotes/gpunotes/kernel"
)

func init() {
	register("kernel", "run as a Jupyter kernel: kernel CONNECTION_FILE", runKernel)
	register("kernel-crash-reporter", "(started by kernel) tells the front end why the kernel died", runCrashReporter)
	register("install", "write the kernelspec: install [--user|--sys-prefix|--prefix DIR] [--name NAME] [--papermill [--python PY]]", runInstall)
	register("uninstall", "remove the kernelspec: uninstall [--name NAME]", runUninstall)
}

// newSession starts an interpreter with the preloaded packages; the kernel, the notebook
// runner and cluster workers all use it.
func newSession() (*interp.Session, error) {
	return interp.New(interp.Options{Symbols: preload.Symbols, Preload: preload.Packages, Renamed: preload.Renamed})
}

// newUserSession is newSession for the user's own cells (kernel, notebook runner): functions
// its cells declare can be submitted to cluster workers by name.
func newUserSession() (*interp.Session, error) {
	s, err := newSession()
	if err != nil {
		return nil, err
	}
	cluster.SetSourceResolver(s.SourceOf)
	cluster.SetSchedulerEvaluator(newSourceEvaluator()) // RunOnScheduler of a LocalCUDA
	cluster.SetResultTypeResolver(s.ResultTypes)
	return s, nil
}

// executor adapts an interp.Session to kernel.Executor. The session starts in the background
// (start) once the kernel has answered the front end's first kernel_info, so that reply does
// not wait for the interpreter; the first request that needs it starts it if need be and
// waits for it.
type executor struct {
	once   sync.Once
	before func() // runs before the session is built (the crash reporter's start)
	ready  chan struct{}
	s      *interp.Session
	err    error
}

func newExecutor() *executor { return &executor{ready: make(chan struct{})} }

// start builds the session in the background, once.
func (e *executor) start() {
	e.once.Do(func() {
		go func() {
			defer close(e.ready)
			if e.before != nil {
				e.before()
			}
			e.s, e.err = newUserSession()
		}()
	})
}

func (e *executor) session() (*interp.Session, error) {
	e.start()
	<-e.ready
	if e.err != nil {
		return nil, fmt.Errorf("start interpreter: %w", e.err)
	}
	return e.s, nil
}

func (e *executor) Execute(ctx context.Context, code string, out kernel.Output) (*display.Data, error) {
	s, err := e.session()
	if err != nil {
		return nil, err
	}
	return s.Execute(ctx, code, out)
}

func (e *executor) EvalExpr(ctx context.Context, expr string) (display.Data, error) {
	s, err := e.session()
	if err != nil {
		return display.Data{}, err
	}
	return s.EvalExpr(ctx, expr)
}

func (e *executor) Complete(code string, cursor int) ([]string, int, int) {
	s, err := e.session()
	if err != nil {
		return nil, cursor, cursor
	}
	return s.Complete(code, cursor)
}

func (e *executor) Inspect(code string, cursor, detail int) (map[string]any, bool) {
	s, err := e.session()
	if err != nil {
		return nil, false
	}
	return s.Inspect(code, cursor, detail)
}

func (e *executor) IsComplete(code string) (string, string) {
	s, err := e.session()
	if err != nil {
		return "unknown", ""
	}
	return s.IsComplete(code)
}

func runKernel(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: gpunotes kernel CONNECTION_FILE", errUsage)
	}
	ci, err := kernel.ReadConnectionFile(args[0])
	if err != nil {
		return err
	}
	// A fatal error in a cell (stack overflow, out of memory) cannot be recovered in Go: the
	// kernel then exits, its report in the log (the real stderr, saved before cells capture
	// fd 2), and the front end sees the kernel die and restarts it.
	interp.SetSystemMemoryLimit()
	opts := kernel.Options{Version: version, Comms: widget.Comms()}
	// The crash reporter (a second process of this binary, whose package inits cost as much
	// CPU as ours) and the interpreter start after the first kernel_info_reply, or at the
	// first request that needs them: on a busy machine they competed with that reply.
	ex := newExecutor()
	var (
		reporter     sync.Once
		reporterExec func([]byte)
	)
	startReporter := func() {
		reporter.Do(func() {
			exec, err := startCrashReporter(args[0])
			if err == nil {
				reporterExec = exec
				return
			}
			// Without the reporter a fatal error still reaches the log.
			fmt.Fprintf(os.Stderr, "gpunotes kernel: crash reporter: %v\n", err)
			if err := reportCrashes(); err != nil {
				fmt.Fprintf(os.Stderr, "gpunotes kernel: crash output: %v\n", err)
			}
		})
	}
	ex.before = startReporter
	opts.OnExecute = func(header []byte) {
		startReporter()
		if reporterExec != nil {
			reporterExec(header)
		}
	}
	opts.OnKernelInfo = ex.start
	// GPUNOTES_MAX_MESSAGE (bytes) and GPUNOTES_HANDSHAKE_TIMEOUT (a Go duration) tune the
	// socket bounds; kernel.json's env can set them.
	if v := os.Getenv("GPUNOTES_MAX_MESSAGE"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("GPUNOTES_MAX_MESSAGE=%q: want a positive number of bytes", v)
		}
		opts.MaxMessage = n
	}
	if v := os.Getenv("GPUNOTES_HANDSHAKE_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("GPUNOTES_HANDSHAKE_TIMEOUT=%q: want a positive duration such as 10s", v)
		}
		opts.HandshakeTimeout = d
	}
	k, err := kernel.New(ci, ex, opts)
	if err != nil {
		return err
	}
	// GPUNOTES_CPUPROFILE=FILE profiles the kernel process until it shuts down.
	if path := os.Getenv("GPUNOTES_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go watchLauncher(ctx, cancel, time.Second)
	_, err = k.Serve(ctx)
	return err
}

// watchLauncher shuts the kernel down (cancel) once the process that launched it is gone, as
// ipykernel does: jupyter_client names it in JPY_PARENT_PID and starts kernels in sessions of
// their own, so a front end killed with SIGKILL would otherwise leave the kernel running,
// holding its ports, its GPU memory and its cluster workers. The parent is watched only if it
// is still the named process when the kernel starts (not for kernels started another way).
func watchLauncher(ctx context.Context, cancel func(), every time.Duration) {
	pid, err := strconv.Atoi(os.Getenv("JPY_PARENT_PID"))
	if err != nil || pid <= 1 || os.Getppid() != pid {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if os.Getppid() != pid {
				fmt.Fprintf(os.Stderr, "gpunotes kernel: the process that launched it (pid %d) is gone; shutting down\n", pid)
				cancel()
				return
			}
		}
	}
}

// startCrashReporter starts `gpunotes kernel-crash-reporter CONNECTION_FILE`: the runtime's
// fatal error report goes to it on fd 3, and the returned func keeps each execute request's
// header in a page shared with it (fd 4, headerSlot), which it reads once the kernel died.
// Shared memory, not a pipe: a pipe write per cell woke the reporter process for every cell,
// on a machine whose two cores the kernel and its front end already share.
func startCrashReporter(connFile string) (func([]byte), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	slot, err := newHeaderSlot()
	if err != nil {
		return nil, err
	}
	cr, cw, err := os.Pipe()
	if err != nil {
		slot.file.Close()
		return nil, err
	}
	cmd := exec.Command(exe, "kernel-crash-reporter", connFile)
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{cr, slot.file}
	err = cmd.Start()
	cr.Close()
	slot.file.Close() // the mapping stays
	if err != nil {
		cw.Close()
		return nil, err
	}
	go func() { _ = cmd.Wait() }()
	if err := interp.ReportCrashesTo(cw); err != nil {
		return nil, err
	}
	return slot.store, nil
}

// headerSlotSize bounds the execute request header the crash reporter can name (headers are a
// few hundred bytes; a longer one is not kept, and the report then has no parent).
const headerSlotSize = 64 << 10

// headerSlot is a shared mapping of an unlinked file: a little-endian uint32 length, then the
// last execute request's header.
type headerSlot struct {
	file *os.File
	mem  []byte
	mu   sync.Mutex
}

func newHeaderSlot() (*headerSlot, error) {
	f, err := os.CreateTemp("", "gpunotes-header-*")
	if err != nil {
		return nil, fmt.Errorf("crash reporter header file: %w", err)
	}
	os.Remove(f.Name())
	if err := f.Truncate(headerSlotSize); err != nil {
		f.Close()
		return nil, fmt.Errorf("crash reporter header file: %w", err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, headerSlotSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("map the crash reporter header file: %w", err)
	}
	return &headerSlot{file: f, mem: mem}, nil
}

// store keeps header as the last one. The length is cleared while the bytes change, so a
// kernel dying in between leaves no header rather than a torn one.
func (h *headerSlot) store(header []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	length := (*uint32)(unsafe.Pointer(&h.mem[0]))
	atomic.StoreUint32(length, 0)
	if len(header) > len(h.mem)-4 {
		return
	}
	copy(h.mem[4:], header)
	atomic.StoreUint32(length, uint32(len(header)))
}

// readHeaderSlot reads what headerSlot.store kept in f last (nil if nothing).
func readHeaderSlot(f *os.File) []byte {
	var n [4]byte
	if _, err := f.ReadAt(n[:], 0); err != nil {
		return nil
	}
	size := binary.LittleEndian.Uint32(n[:])
	if size == 0 || size > headerSlotSize-4 {
		return nil
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 4); err != nil {
		return nil
	}
	return b
}

// runCrashReporter is the process startCrashReporter starts: fd 3 carries the kernel's crash
// report, fd 4 the header of its last execute request.
func runCrashReporter(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: kernel-crash-reporter CONNECTION_FILE", errUsage)
	}
	// The kernel's process group gets the front end's SIGINTs; they are not for us.
	signal.Ignore(os.Interrupt)
	crash := os.NewFile(3, "crash")
	headers := os.NewFile(4, "headers")
	var report bytes.Buffer
	_, _ = io.Copy(io.MultiWriter(&report, os.Stderr), crash)
	if report.Len() == 0 {
		return nil // the kernel ended normally
	}
	why := kernel.CrashSummary(report.String())
	fmt.Fprintf(os.Stderr, "gpunotes kernel: the kernel process died: %s\n", why)
	ci, err := kernel.ReadConnectionFile(args[0])
	if err != nil {
		return err
	}
	// The kernel is gone: the header it kept last is the cell that killed it.
	var parent []byte
	if headers != nil {
		parent = readHeaderSlot(headers)
	}
	return kernel.ReportDeath(ci, parent, why)
}

// reportCrashes sends the runtime's fatal error reports to a duplicate of fd 2 as it is now.
func reportCrashes() error {
	fd, err := syscall.Dup(2)
	if err != nil {
		return fmt.Errorf("duplicate stderr: %w", err)
	}
	syscall.CloseOnExec(fd)
	return interp.ReportCrashesTo(os.NewFile(uintptr(fd), "stderr"))
}

func runInstall(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	user := fs.Bool("user", false, "install for the current user (the default)")
	sys := fs.Bool("sys-prefix", false, "install into the active Python environment")
	prefix := fs.String("prefix", "", "install into `DIR`/share/jupyter")
	name := fs.String("name", install.DefaultName, "kernelspec `name`")
	papermill := fs.Bool("papermill", false, "also install papermill's translator for Go (gpunotes-papermill) into the Jupyter environment's Python")
	python := fs.String("python", "", "the `python` that receives gpunotes-papermill (default: the one running jupyter)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *python != "" && !*papermill {
		return fmt.Errorf("%w: --python goes with --papermill", errUsage)
	}
	opts := install.Options{Name: *name}
	switch {
	case *prefix != "" && (*sys || *user), *sys && *user:
		return fmt.Errorf("%w: choose one of --user, --sys-prefix, --prefix", errUsage)
	case *prefix != "":
		opts.Scope, opts.Prefix = install.Prefix, *prefix
	case *sys:
		opts.Scope = install.SysPrefix
	}
	dir, err := install.Install(opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "Installed kernelspec %s in %s\n", opts.Name, dir)
	if !*papermill {
		return nil
	}
	py := *python
	if py == "" {
		if py, err = install.JupyterPython(); err != nil {
			return err
		}
	}
	res, err := install.InstallPapermill(ctx, py, opts.Scope == install.User)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "Installed %s into %s (papermill -p NAME VALUE now writes Go parameters)\n", res.Wheel, res.Python)
	if res.Warning != "" {
		fmt.Fprintf(os.Stderr, "warning: %s\n", res.Warning)
	}
	return nil
}

func runUninstall(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("uninstall", flag.ContinueOnError)
	name := fs.String("name", install.DefaultName, "kernelspec `name`")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	removed, err := install.Uninstall(*name)
	for _, d := range removed {
		fmt.Printf("Removed %s\n", d)
	}
	return err
}
