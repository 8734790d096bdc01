package interp

import (
	"fmt"
	randv2 "math/rand/v2"
	"reflect"
	"runtime"
	"sync"
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

// interned holds unique.Make's canonical copies, by value. Go's unique package lets the GC
// reclaim a value no handle refers to; these are kept for the process.
var internTable sync.Map

// intern is unique.Make for the prelude's gnUniqueMake: a pointer to one canonical copy of v,
// the same pointer for every equal v.
func intern(v any) any {
	t := reflect.TypeOf(v)
	if t == nil || !t.Comparable() {
		panic(fmt.Sprintf("unique.Make: %T is not comparable", v))
	}
	if p, ok := internTable.Load(v); ok {
		return p
	}
	p := reflect.New(t)
	p.Elem().Set(reflect.ValueOf(v))
	got, _ := internTable.LoadOrStore(v, p.Interface())
	return got
}

// interned is a unique.Handle's Value: the value its canonical copy holds.
func interned(p any) any { return reflect.ValueOf(p).Elem().Interface() }
