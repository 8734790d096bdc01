package main

import "context"

func init() {
	register("worker", "one cluster worker", func(ctx context.Context, args []string) error { return errNotYet("worker") })
	register("scheduler", "a standalone scheduler (multi-node)", func(ctx context.Context, args []string) error { return errNotYet("scheduler") })
	register("cuda-worker", "one worker per local GPU (multi-node)", func(ctx context.Context, args []string) error { return errNotYet("cuda-worker") })
}
