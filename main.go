// Command gpunotes is a Jupyter kernel for Go with preloaded GPU array and cluster packages.
//
// main.go only dispatches; each subcommand lives in a cmd_*.go file of this package, which is
// the one place that wires the project's packages together.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one gpunotes subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

// commands maps subcommand names to their implementations; cmd_*.go files register here.
var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string) error) {
	commands[name] = command{summary: summary, run: run}
}

// errUsage marks an error caused by bad arguments; main prints usage and exits 2.
var errUsage = errors.New("usage")

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gpunotes <command> [arguments]")
	fmt.Fprintln(os.Stderr, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-12s %s\n", n, commands[n].summary)
	}
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage()
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "gpunotes: unknown command %q\n", args[0])
		usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "gpunotes %s: %v\n", args[0], err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}
