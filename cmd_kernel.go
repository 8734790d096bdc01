package main

import "context"

func init() {
	register("kernel", "run as a Jupyter kernel: kernel CONNECTION_FILE", func(ctx context.Context, args []string) error { return errNotYet("kernel") })
	register("install", "write the kernelspec", func(ctx context.Context, args []string) error { return errNotYet("install") })
	register("uninstall", "remove the kernelspec", func(ctx context.Context, args []string) error { return errNotYet("uninstall") })
}
