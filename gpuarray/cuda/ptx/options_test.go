package ptx_test

import "github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"

// setPTX changes the generator's options (ptx.SetOptions) by f; the test restores them.
func setPTX(f func(o *ptx.Options)) {
	o := ptx.CurrentOptions()
	f(&o)
	ptx.SetOptions(o)
}
