package interp

import (
	"fmt"
	randv2 "math/rand/v2"
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

// randN is math/rand/v2's N for the prelude's generic gnRandN: a value in [0, n) of n's type
// (any integer kind, time.Duration included); it panics as N does for n <= 0.
func randN(n any) any {
	v := reflect.ValueOf(n)
	switch {
	case v.CanInt():
		if v.Int() <= 0 {
			panic("invalid argument to N")
		}
		return reflect.ValueOf(int64(randv2.Uint64N(uint64(v.Int())))).Convert(v.Type()).Interface()
	case v.CanUint():
		if v.Uint() == 0 {
			panic("invalid argument to N")
		}
		return reflect.ValueOf(randv2.Uint64N(v.Uint())).Convert(v.Type()).Interface()
	}
	panic(fmt.Sprintf("rand.N of %T: not an integer type", n))
}
