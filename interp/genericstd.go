package interp

import (
	"fmt"
	"reflect"
	"runtime"
)

// Compiled halves of generic standard library functions that extraction skips and that
// interpreted code cannot write alone: the prelude (modern.go) calls them with the values as
// any.

// addCleanup is runtime.AddCleanup for a pointer of any type: cleanup(arg) runs once the
// object ptr points to is unreachable. A panic of cleanup is printed, not raised: it would
// end the kernel.
func addCleanup(ptr any, cleanup func(any), arg any) runtime.Cleanup {
	v := reflect.ValueOf(ptr)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic("runtime.AddCleanup: ptr is nil or not a pointer")
	}
	return runtime.AddCleanup((*byte)(v.UnsafePointer()), func(a any) {
		defer func() {
			if r := recover(); r != nil {
				fmt.Println("runtime.AddCleanup: the cleanup panicked:", r)
			}
		}()
		cleanup(a)
	}, arg)
}
