package main

import "context"

func init() {
	register("run", "execute a notebook headless", func(ctx context.Context, args []string) error { return errNotYet("run") })
}
