package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/interp/preload"
	yaegi "github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
)

func init() {
	register("worker", "one cluster worker", runWorker)
	register("scheduler", "a standalone scheduler (multi-node)", func(ctx context.Context, args []string) error { return errNotYet("scheduler") })
	register("cuda-worker", "one worker per local GPU (multi-node)", func(ctx context.Context, args []string) error { return errNotYet("cuda-worker") })
}

// runWorker is `gpunotes worker --scheduler ADDR [--gpu UUID] ...`. The scheduler's token comes
// from GPUNOTES_CLUSTER_TOKEN (an environment variable, so that it does not show in ps).
func runWorker(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	var cfg cluster.WorkerConfig
	var cpus string
	var resources multiFlag
	fs.StringVar(&cfg.Scheduler, "scheduler", "", "scheduler address (tcp://host:port)")
	fs.StringVar(&cfg.Name, "name", "", "worker name (default: host-pid)")
	fs.IntVar(&cfg.NThreads, "nthreads", 1, "tasks run at once")
	fs.Uint64Var(&cfg.MemoryLimit, "memory-limit", 0, "host bytes for results before spilling (0: no limit)")
	fs.Uint64Var(&cfg.DeviceMemoryLimit, "device-memory-limit", 0, "GPU bytes this worker may use")
	fs.StringVar(&cfg.GPU, "gpu", "", "UUID of the worker's GPU or MIG instance")
	fs.StringVar(&cfg.GPUName, "gpu-name", "", "GPU product name, for tables")
	fs.StringVar(&cfg.GPULabel, "gpu-label", "", "GPU label, for tables")
	fs.StringVar(&cfg.LocalDirectory, "local-directory", "", "directory for spilled results")
	fs.StringVar(&cpus, "cpus", "", "CPU affinity, comma-separated CPU numbers")
	fs.Var(&resources, "resource", "NAME=AMOUNT resource this worker offers (repeatable)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if cfg.Scheduler == "" {
		return fmt.Errorf("%w: --scheduler is required", errUsage)
	}
	cfg.Token = os.Getenv("GPUNOTES_CLUSTER_TOKEN")
	if cpus != "" {
		for _, c := range strings.Split(cpus, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(c))
			if err != nil {
				return fmt.Errorf("%w: --cpus %q: %v", errUsage, cpus, err)
			}
			cfg.CPUs = append(cfg.CPUs, n)
		}
	}
	cfg.Resources = map[string]float64{}
	for _, r := range resources {
		k, v, ok := strings.Cut(r, "=")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return fmt.Errorf("%w: --resource %q: want NAME=AMOUNT", errUsage, r)
		}
		cfg.Resources[k] = f
	}
	return cluster.RunWorker(ctx, cfg, newSourceEvaluator())
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// sourceEvaluator runs shipped functions in Go interpreters with the standard library and the
// preloaded packages. Each distinct source gets its own interpreter (cached by hash), so a
// function redeclared in a later cell never meets its stale older version.
type sourceEvaluator struct {
	mu    sync.Mutex
	progs map[[32]byte]*program
	order [][32]byte
}

type program struct {
	once  sync.Once
	i     *yaegi.Interpreter
	err   error
	mu    sync.Mutex // yaegi's Eval is not safe for concurrent use
	funcs map[string]reflect.Value
}

// fn returns the function named name, evaluated once.
func (p *program) fn(ctx context.Context, name string) (reflect.Value, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.funcs[name]; ok {
		return v, nil
	}
	v, err := p.i.EvalWithContext(ctx, name)
	if err != nil {
		return reflect.Value{}, fmt.Errorf("find %s: %w", name, err)
	}
	if v.Kind() != reflect.Func {
		return reflect.Value{}, fmt.Errorf("%s is a %s, not a func", name, v.Kind())
	}
	if p.funcs == nil {
		p.funcs = map[string]reflect.Value{}
	}
	p.funcs[name] = v
	return v, nil
}

const maxPrograms = 64

func newSourceEvaluator() *sourceEvaluator {
	return &sourceEvaluator{progs: map[[32]byte]*program{}}
}

func (e *sourceEvaluator) program(ctx context.Context, src string) (*program, error) {
	key := sha256.Sum256([]byte(src))
	e.mu.Lock()
	p := e.progs[key]
	if p == nil {
		p = &program{}
		e.progs[key] = p
		e.order = append(e.order, key)
		if len(e.order) > maxPrograms {
			delete(e.progs, e.order[0])
			e.order = e.order[1:]
		}
	}
	e.mu.Unlock()
	p.once.Do(func() { p.i, p.err = compileSource(ctx, src) })
	return p, p.err
}

// compileSource evaluates src in a fresh interpreter; the preloaded packages are imported
// unless src imports them itself.
func compileSource(ctx context.Context, src string) (*yaegi.Interpreter, error) {
	i := yaegi.New(yaegi.Options{})
	if err := i.Use(stdlib.Symbols); err != nil {
		return nil, fmt.Errorf("load stdlib: %w", err)
	}
	if err := i.Use(preload.Symbols); err != nil {
		return nil, fmt.Errorf("load preloaded packages: %w", err)
	}
	imported := map[string]bool{}
	body := src
	if !strings.HasPrefix(strings.TrimSpace(src), "package ") {
		body = "package main\n" + src
	}
	if f, err := parser.ParseFile(token.NewFileSet(), "", body, parser.ImportsOnly); err == nil {
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			imported[p] = true
			imported[path.Base(p)] = true
		}
	}
	for _, p := range preload.Packages {
		if imported[p] || imported[path.Base(p)] {
			continue
		}
		if _, err := i.EvalWithContext(ctx, fmt.Sprintf("import %q", p)); err != nil {
			return nil, fmt.Errorf("import %s: %w", p, err)
		}
	}
	if _, err := i.EvalWithContext(ctx, src); err != nil {
		return nil, fmt.Errorf("evaluate shipped source: %w", err)
	}
	return i, nil
}

var errorType = reflect.TypeOf((*error)(nil)).Elem()

// Call evaluates src (once) and calls fn with args converted to its parameter types.
func (e *sourceEvaluator) Call(ctx context.Context, src, fn string, args []any) ([]any, error) {
	p, err := e.program(ctx, src)
	if err != nil {
		return nil, err
	}
	v, err := p.fn(ctx, fn)
	if err != nil {
		return nil, err
	}
	t := v.Type()
	in := make([]reflect.Value, len(args))
	for k, a := range args {
		var pt reflect.Type
		switch {
		case t.IsVariadic() && k >= t.NumIn()-1:
			pt = t.In(t.NumIn() - 1).Elem()
		case k < t.NumIn():
			pt = t.In(k)
		default:
			return nil, fmt.Errorf("%s takes %d arguments, got %d", fn, t.NumIn(), len(args))
		}
		if in[k], err = convertArg(a, pt); err != nil {
			return nil, fmt.Errorf("%s argument %d: %w", fn, k, err)
		}
	}
	if !t.IsVariadic() && len(args) != t.NumIn() || t.IsVariadic() && len(args) < t.NumIn()-1 {
		return nil, fmt.Errorf("%s takes %d arguments, got %d", fn, t.NumIn(), len(args))
	}
	out := v.Call(in)
	res := make([]any, 0, len(out))
	for k, o := range out {
		if k == len(out)-1 && t.Out(k) == errorType {
			if !o.IsNil() {
				return nil, o.Interface().(error)
			}
			break
		}
		res = append(res, o.Interface())
	}
	return res, nil
}

// convertArg converts a decoded argument to a parameter type: directly when assignable or
// numerically convertible, otherwise through JSON (structs and maps come over the wire as
// generic maps).
func convertArg(a any, t reflect.Type) (reflect.Value, error) {
	if a == nil {
		return reflect.Zero(t), nil
	}
	v := reflect.ValueOf(a)
	if v.Type().AssignableTo(t) {
		return v, nil
	}
	if isNumber(v.Kind()) && isNumber(t.Kind()) {
		return v.Convert(t), nil
	}
	data, err := json.Marshal(a)
	if err != nil {
		return reflect.Value{}, fmt.Errorf("cannot convert %T to %s: %w", a, t, err)
	}
	p := reflect.New(t)
	if err := json.Unmarshal(data, p.Interface()); err != nil {
		return reflect.Value{}, fmt.Errorf("cannot convert %T to %s: %w", a, t, err)
	}
	return p.Elem(), nil
}

func isNumber(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Float64
}
