package main

import (
	"context"
	"fmt"
	"runtime"
)

func init() {
	register("version", "print the version", func(ctx context.Context, args []string) error {
		fmt.Printf("gpunotes %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return nil
	})
}
