package main

import (
	"context"

	"github.com/gpunotes/gpunotes/kernel"
)

// RunCallback runs a widget callback of the cells in the session (kernel.CallbackRunner).
func (e *executor) RunCallback(ctx context.Context, out kernel.Output, fn func()) error {
	s, err := e.session()
	if err != nil {
		return err
	}
	return s.RunCallback(ctx, out, fn)
}
