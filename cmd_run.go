package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpunotes/gpunotes/interp"
	"github.com/gpunotes/gpunotes/nbrun"
)

func init() {
	register("run", "execute a notebook headless: run NOTEBOOK.ipynb [-o OUT.ipynb | --inplace] [--param K=V ...]", runNotebookCmd)
}

const runUsage = `usage: gpunotes run NOTEBOOK.ipynb [-o OUT.ipynb | --inplace] [--param NAME=VALUE ...]
                    [--timeout DURATION] [--quiet]

Executes the notebook's code cells in order in one Go session, with no Jupyter needed, and
writes the executed notebook (nbformat 4.5) to OUT.ipynb (default: NOTEBOOK.out.ipynb beside
the input; --inplace overwrites the input). Progress goes to stderr, the cells' output to the
terminal. The run stops at the first failing cell, still writes what ran, and exits 1.

  -o, --output FILE    where to write the executed notebook
      --inplace        overwrite the input notebook
  -p, --param N=V      set variable N of the cell tagged "parameters" (repeatable); V is Go
                       source (500000, 1e-3, true) or, for string variables, plain text
      --timeout D      fail a cell that runs longer than D (e.g. 10m; default none)
  -q, --quiet          do not echo the cells' output to the terminal`

type runArgs struct {
	input, output string
	inplace       bool
	quiet         bool
	timeout       time.Duration
	params        []nbrun.Param
}

func parseRunArgs(args []string) (runArgs, error) {
	var a runArgs
	bad := func(format string, v ...any) (runArgs, error) {
		return runArgs{}, fmt.Errorf("%w: %s\n%s", errUsage, fmt.Sprintf(format, v...), runUsage)
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, val, hasVal := strings.Cut(arg, "=")
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			if a.input != "" {
				return bad("more than one notebook given (%q and %q)", a.input, arg)
			}
			a.input = arg
			continue
		}
		value := func() (string, bool) {
			if hasVal {
				return val, true
			}
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		switch name {
		case "-h", "--help":
			return bad("help requested")
		case "-o", "--output":
			v, ok := value()
			if !ok || v == "" {
				return bad("%s needs a file name", name)
			}
			a.output = v
		case "--inplace":
			a.inplace = true
		case "-q", "--quiet":
			a.quiet = true
		case "-p", "--param":
			v, ok := value()
			if !ok {
				return bad("%s needs NAME=VALUE", name)
			}
			p, err := nbrun.ParseParam(v)
			if err != nil {
				return bad("%v", err)
			}
			a.params = append(a.params, p)
		case "--timeout":
			v, ok := value()
			if !ok {
				return bad("--timeout needs a duration")
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return bad("--timeout %q: want a positive duration such as 90s or 10m", v)
			}
			a.timeout = d
		default:
			return bad("unknown flag %s", name)
		}
	}
	if a.input == "" {
		return bad("no notebook given")
	}
	if a.inplace && a.output != "" {
		return bad("give either -o or --inplace, not both")
	}
	return a, nil
}

// sameFile reports whether a and b name the same file (or the same path when b is missing).
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(fa, fb)
	}
	pa, _ := filepath.Abs(a)
	pb, _ := filepath.Abs(b)
	return pa == pb
}

func runNotebookCmd(ctx context.Context, args []string) error {
	a, err := parseRunArgs(args)
	if err != nil {
		return err
	}
	if os.Getenv(runChildEnv) == "" {
		return superviseRun(a, args)
	}
	if err := reportCrashes(); err != nil {
		return err
	}
	interp.SetSystemMemoryLimit()
	events := os.NewFile(3, "run-events")
	defer events.Close()
	note := func(format string, v ...any) { fmt.Fprintf(events, format, v...) }
	defer note("end\n")
	out := a.output
	switch {
	case a.inplace:
		out = a.input
	case out == "":
		out = strings.TrimSuffix(a.input, ".ipynb") + ".out.ipynb"
	case sameFile(a.input, out):
		return fmt.Errorf("%w: -o %s is the input notebook; use --inplace to overwrite it", errUsage, out)
	}
	nb, err := nbrun.ReadFile(a.input)
	if err != nil {
		return err
	}
	if err := nbrun.CheckLanguage(nb); err != nil {
		return fmt.Errorf("%s: %w", a.input, err)
	}
	if err := nbrun.InjectParams(nb, a.params); err != nil {
		return fmt.Errorf("%s: %w", a.input, err)
	}
	outAbs, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("output path: %w", err)
	}
	if st, err := os.Stat(filepath.Dir(outAbs)); err != nil || !st.IsDir() {
		return fmt.Errorf("output directory %s does not exist", filepath.Dir(out))
	}
	if err := nbrun.CheckWritable(outAbs); err != nil {
		return err
	}

	// The session captures fds 1 and 2 while a cell runs, so the terminal is reached through
	// duplicates made before any cell starts.
	term, err := terminalFiles()
	if err != nil {
		return err
	}
	defer term[0].Close()
	defer term[1].Close()

	// Cells run in the notebook's directory, as Jupyter runs kernels.
	dir := filepath.Dir(a.input)
	if err := os.Chdir(dir); err != nil {
		return fmt.Errorf("enter notebook directory: %w", err)
	}
	sess, err := newUserSession()
	if err != nil {
		return fmt.Errorf("start Go session: %w", err)
	}
	defer sess.Close()

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	first := true
	opts := nbrun.Options{Progress: term[1], CellTimeout: a.timeout,
		CellStarted: func(i int) {
			if first {
				// Outputs are cleared by now: a first cell that kills the process leaves this.
				first = false
				if err := nb.WriteFile(outAbs); err != nil {
					fmt.Fprintf(term[1], "gpunotes run: %v\n", err)
				}
			}
			note("start %d\n", i)
		},
		CellDone: func(i int) {
			// Saved after every cell, so a later cell that kills the process loses nothing.
			if err := nb.WriteFile(outAbs); err != nil {
				fmt.Fprintf(term[1], "gpunotes run: %v\n", err)
			}
			note("done %d\n", i)
		}}
	if !a.quiet {
		opts.Stdout, opts.Stderr = term[0], term[1]
	}
	fmt.Fprintf(term[1], "gpunotes run %s\n", a.input)
	res, runErr := nbrun.Run(ctx, nb, sess, opts)
	if werr := nb.WriteFile(outAbs); werr != nil {
		return errors.Join(runErr, werr)
	}
	if runErr != nil {
		fmt.Fprintf(term[1], "wrote %s (stopped at the failing cell)\n", out)
		return runErr
	}
	fmt.Fprintf(term[1], "ran %d code cells in %s; wrote %s\n", res.Executed, res.Elapsed.Round(10*time.Millisecond), out)
	return nil
}

// runChildEnv marks the child process that runs the notebook's cells.
const runChildEnv = "GPUNOTES_RUN_CHILD"

// superviseRun runs the notebook in a child process (this command again). Go cannot recover
// from some failures of a cell (a stack overflow, running out of memory): they end the
// process. The child saves the notebook after every completed cell and says which cell it
// starts, so when it dies the parent marks the cell that killed it in the written notebook,
// names it, and exits 1.
func superviseRun(a runArgs, args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locate the gpunotes binary: %w", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	cmd := exec.Command(exe, append([]string{"run"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), runChildEnv+"=1")
	cmd.ExtraFiles = []*os.File{pw}
	// Ctrl-C reaches the child through the terminal's process group; it interrupts the cell.
	signal.Ignore(os.Interrupt)
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return fmt.Errorf("run: start the notebook's process: %w", err)
	}
	pw.Close()
	pending, ended := -1, false
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "start":
			pending, _ = strconv.Atoi(f[1])
		case len(f) == 2 && f[0] == "done":
			pending = -1
		case len(f) == 1 && f[0] == "end":
			ended = true
		}
	}
	pr.Close()
	werr := cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if ended || pending < 0 {
		if werr != nil && code > 0 {
			// The child already said why (usage, a failing cell, a bad notebook).
			os.Exit(code)
		}
		return werr
	}
	return markKilled(a, pending, cmd.ProcessState)
}

// markKilled records in the output notebook that cell index killed the process.
func markKilled(a runArgs, index int, st *os.ProcessState) error {
	out := a.output
	switch {
	case a.inplace:
		out = a.input
	case out == "":
		out = strings.TrimSuffix(a.input, ".ipynb") + ".out.ipynb"
	}
	nb, err := nbrun.ReadFile(out)
	if err != nil || index >= len(nb.Cells) {
		return fmt.Errorf("the notebook's process died (%v) in its first cell, and no notebook was written: %v", st, err)
	}
	number, count := 0, 0
	for i, c := range nb.Cells {
		if c.Type == "code" && strings.TrimSpace(c.Source) != "" {
			count++
			if i <= index {
				number = count
			}
		}
	}
	c := nb.Cells[index]
	n := number
	c.ExecutionCount = &n
	why := fmt.Sprintf("the process running the notebook died in this cell (%v): Go cannot recover from a stack overflow or from running out of memory; the runtime's report is on stderr", st)
	c.Outputs = []*nbrun.Output{{Type: "error", EName: "ProcessDied", EValue: why, Traceback: []string{"ProcessDied: " + why}}}
	werr := nb.WriteFile(out)
	summary := nbrun.FirstLine(c.Source)
	fmt.Fprintf(os.Stderr, "gpunotes run: code cell %d of %d (id %s, %q) killed the process (%v); wrote %s with the cells before it\n",
		number, count, c.ID, summary, st, out)
	return errors.Join(fmt.Errorf("code cell %d of %d (id %s, %q) killed the process: %v", number, count, c.ID, summary, st), werr)
}

// terminalFiles duplicates fds 1 and 2.
func terminalFiles() ([2]*os.File, error) {
	var fs [2]*os.File
	for i, fd := range []int{1, 2} {
		d, err := syscall.Dup(fd)
		if err != nil {
			if i == 1 {
				fs[0].Close()
			}
			return fs, fmt.Errorf("duplicate fd %d: %w", fd, err)
		}
		syscall.CloseOnExec(d)
		fs[i] = os.NewFile(uintptr(d), []string{"stdout", "stderr"}[i])
	}
	return fs, nil
}
