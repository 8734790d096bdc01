// Package driver binds the CUDA driver API (libcuda.so.1) at run time with purego: no cgo and no
// CUDA headers are needed to build, and a binary built with it starts on machines without an
// NVIDIA driver (Load then returns ErrNoDriver).
//
// The binding is thin: each function checks the CUresult of the call it wraps and returns an
// *Error naming the call, the result code, its name and the driver's description. Handles are
// opaque uintptr values; device pointers are DevicePtr.
//
// A CUDA context is current per OS thread. Callers must make every call for a device from one
// goroutine locked to its OS thread (runtime.LockOSThread) after SetCurrent; package
// gpuarray/cuda does this with one worker goroutine per device.
package driver
