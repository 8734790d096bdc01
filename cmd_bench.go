package main

import "context"

func init() {
	register("bench", "benchmarks (bench seed ...)", func(ctx context.Context, args []string) error { return errNotYet("bench") })
}
