package interp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/display"
)

// magic is a parsed magic command: %name args (line), %%name (whole cell), or !command.
type magic struct {
	name string
	args string
	body string // the rest of the cell for cell magics and %time
}

func parseMagic(code string) (magic, bool) {
	t := strings.TrimLeft(code, " \t\n")
	switch {
	case strings.HasPrefix(t, "!"):
		return magic{name: "!", args: strings.TrimSpace(t[1:])}, true
	case strings.HasPrefix(t, "%%"):
		line, body, _ := strings.Cut(t[2:], "\n")
		name, args, _ := strings.Cut(strings.TrimSpace(line), " ")
		return magic{name: "%%" + name, args: args, body: body}, true
	case strings.HasPrefix(t, "%"):
		line, body, _ := strings.Cut(t[1:], "\n")
		name, args, _ := strings.Cut(strings.TrimSpace(line), " ")
		return magic{name: name, args: strings.TrimSpace(args), body: body}, true
	}
	return magic{}, false
}

const magicHelp = `gpunotes magics:
  %time STATEMENTS    run the rest of the line (and any following lines) and print the wall time
  %%time              run the whole cell and print the wall time
  %%compile           build the cell's funcs with the Go toolchain; later cells call them at
                      compiled speed (arguments and results: gob-encodable values)
  %env                list environment variables; %env NAME shows one; %env NAME=VALUE sets one
  %who                list the names defined by cells
  %help               this help
  !command            run a shell command; its output streams into the cell
Preloaded packages, usable without import: display, gpuarray, cluster, slurm, dataframe.
Interrupt stops a running cell; compiled code sees the cell's context (display.Context()).`

func (s *Session) runMagic(ctx context.Context, m magic, out Output) (*display.Data, error) {
	switch m.name {
	case "time", "%%time":
		code := m.args
		if m.name == "%%time" {
			code = m.body
		} else if m.body != "" {
			code += "\n" + m.body
		}
		start := time.Now()
		res, cerr := s.runCaptured(ctx, code, out)
		out.Stream("stdout", fmt.Sprintf("Wall time: %v\n", time.Since(start).Round(time.Microsecond)))
		if cerr != nil {
			return nil, cerr
		}
		return res, nil
	case "%%compile":
		if err := s.runCompile(ctx, m.body, out); err != nil {
			return nil, err
		}
		return nil, nil
	case "env":
		if m.args == "" {
			env := os.Environ()
			sort.Strings(env)
			out.Stream("stdout", strings.Join(env, "\n")+"\n")
			return nil, nil
		}
		if k, v, ok := strings.Cut(m.args, "="); ok {
			if err := os.Setenv(strings.TrimSpace(k), strings.TrimSpace(v)); err != nil {
				return nil, &CellError{Name: "EnvError", Value: err.Error(), Traceback: []string{err.Error()}}
			}
			out.Stream("stdout", fmt.Sprintf("env: %s=%s\n", strings.TrimSpace(k), strings.TrimSpace(v)))
			return nil, nil
		}
		out.Stream("stdout", os.Getenv(m.args)+"\n")
		return nil, nil
	case "who":
		names := s.names()
		if len(names) == 0 {
			out.Stream("stdout", "No names defined yet.\n")
		} else {
			out.Stream("stdout", strings.Join(names, "\t")+"\n")
		}
		return nil, nil
	case "help":
		out.Stream("stdout", magicHelp+"\n")
		return nil, nil
	case "!":
		if m.args == "" {
			return nil, &CellError{Name: "UsageError", Value: "! needs a command", Traceback: []string{"UsageError: ! needs a command, e.g. !ls"}}
		}
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", m.args)
		cmd.Dir = s.opts.Dir
		cap, err := startCapture(out.Stream)
		if err != nil {
			return nil, &CellError{Name: "InternalError", Value: err.Error(), Traceback: []string{err.Error()}}
		}
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		err = cmd.Run()
		cap.stop()
		if err != nil {
			return nil, &CellError{Name: "ShellError", Value: fmt.Sprintf("%s: %v", m.args, err), Traceback: []string{fmt.Sprintf("ShellError: %q: %v", m.args, err)}}
		}
		return nil, nil
	}
	return nil, &CellError{Name: "UsageError", Value: fmt.Sprintf("unknown magic %%%s (see %%help)", strings.TrimPrefix(m.name, "%%")),
		Traceback: []string{fmt.Sprintf("UsageError: unknown magic %%%s; %%help lists them", strings.TrimPrefix(m.name, "%%"))}}
}
