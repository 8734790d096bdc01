package driver

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// LibName is the shared library the binding opens.
const LibName = "libcuda.so.1"

// ErrNoDriver is returned (wrapped) by Load when libcuda.so.1 cannot be opened.
var ErrNoDriver = errors.New("no NVIDIA driver found: " + LibName)

// DevicePtr is a device memory address (CUdeviceptr).
type DevicePtr uint64

// Handle types of the driver API; all are opaque pointers.
type (
	// Context is a CUcontext.
	Context uintptr
	// Stream is a CUstream; 0 is the context's default (legacy) stream.
	Stream uintptr
	// Event is a CUevent.
	Event uintptr
	// Module is a CUmodule.
	Module uintptr
	// Function is a CUfunction.
	Function uintptr
	// LinkState is a CUlinkState.
	LinkState uintptr
)

// Result is a CUresult.
type Result int32

// Selected CUresult values.
const (
	Success              Result = 0
	ErrorOutOfMemory     Result = 2
	ErrorNotInitialized  Result = 3
	ErrorNoDevice        Result = 100
	ErrorInvalidDevice   Result = 101
	ErrorInvalidPTX      Result = 218
	ErrorUnsupportedPTX  Result = 222
	ErrorNotReady        Result = 600
	ErrorLaunchFailed    Result = 719
	ErrorIllegalAddress  Result = 700
	ErrorLaunchOutOfRes  Result = 701
	ErrorInvalidContext  Result = 201
	ErrorInvalidImage    Result = 200
	ErrorInvalidValue    Result = 1
	ErrorNoBinaryForGPU  Result = 209
	ErrorJITCompilerNone Result = 221
)

// Error is a failed driver call.
type Error struct {
	Call   string // the driver function, e.g. "cuMemAlloc_v2"
	Code   Result
	Name   string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Detail string // the driver's description
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%d): %s", e.Call, e.Name, int32(e.Code), e.Detail)
}

// IsCode reports whether err is (or wraps) a driver *Error with the given code.
func IsCode(err error, code Result) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Device attributes used by this project (CUdevice_attribute values).
const (
	AttrMaxThreadsPerBlock       = 1
	AttrMaxSharedMemoryPerBlock  = 8
	AttrWarpSize                 = 10
	AttrClockRate                = 13
	AttrMultiprocessorCount      = 16
	AttrPCIBusID                 = 33
	AttrPCIDeviceID              = 34
	AttrMaxThreadsPerSM          = 39
	AttrComputeCapabilityMajor   = 75
	AttrComputeCapabilityMinor   = 76
	AttrL2CacheSize              = 38
	AttrPCIDomainID              = 50
	AttrMaxRegistersPerBlock     = 12
	AttrMaxSharedMemoryPerSM     = 81
	AttrMaxBlocksPerSM           = 106
	AttrUnifiedAddressing        = 41
	AttrGlobalMemoryBusWidth     = 37
	AttrMemoryClockRate          = 36
	AttrConcurrentManagedAccess  = 89
	AttrCanUseHostPointerForRegs = 91
)

// Function attributes (CUfunction_attribute values).
const (
	FuncAttrMaxThreadsPerBlock = 0
	FuncAttrSharedSizeBytes    = 1
	FuncAttrNumRegs            = 4
	FuncAttrLocalSizeBytes     = 3
)

// JIT options (CUjit_option values) used by the linker.
const (
	jitMaxRegisters           = 0
	jitInfoLogBuffer          = 3
	jitInfoLogBufferSizeBytes = 4
	jitErrorLogBuffer         = 5
	jitErrorLogBufferSize     = 6
	jitLogVerbose             = 12
	jitInputPTX               = 1
)

var (
	loadOnce sync.Once
	loadErr  error

	cuInit                     func(flags uint32) Result
	cuDriverGetVersion         func(v *int32) Result
	cuDeviceGetCount           func(n *int32) Result
	cuDeviceGet                func(d *int32, ordinal int32) Result
	cuDeviceGetName            func(name *byte, n int32, d int32) Result
	cuDeviceGetAttribute       func(v *int32, attr int32, d int32) Result
	cuDeviceTotalMem           func(b *uint64, d int32) Result
	cuDeviceGetUuid            func(uuid *[16]byte, d int32) Result
	cuDevicePrimaryCtxRetain   func(ctx *Context, d int32) Result
	cuDevicePrimaryCtxRelease  func(d int32) Result
	cuCtxSetCurrent            func(ctx Context) Result
	cuCtxSynchronize           func() Result
	cuStreamCreate             func(s *Stream, flags uint32) Result
	cuStreamDestroy            func(s Stream) Result
	cuStreamSynchronize        func(s Stream) Result
	cuStreamQuery              func(s Stream) Result
	cuEventCreate              func(e *Event, flags uint32) Result
	cuEventRecord              func(e Event, s Stream) Result
	cuEventSynchronize         func(e Event) Result
	cuEventQuery               func(e Event) Result
	cuEventElapsedTime         func(ms *float32, start, end Event) Result
	cuEventDestroy             func(e Event) Result
	cuStreamWaitEvent          func(s Stream, e Event, flags uint32) Result
	cuMemAlloc                 func(p *DevicePtr, n uint64) Result
	cuMemFree                  func(p DevicePtr) Result
	cuMemGetInfo               func(free, total *uint64) Result
	cuMemAllocHost             func(p *unsafe.Pointer, n uint64) Result
	cuMemFreeHost              func(p unsafe.Pointer) Result
	cuMemcpyHtoD               func(dst DevicePtr, src unsafe.Pointer, n uint64) Result
	cuMemcpyDtoH               func(dst unsafe.Pointer, src DevicePtr, n uint64) Result
	cuMemcpyHtoDAsync          func(dst DevicePtr, src unsafe.Pointer, n uint64, s Stream) Result
	cuMemcpyDtoHAsync          func(dst unsafe.Pointer, src DevicePtr, n uint64, s Stream) Result
	cuMemcpyDtoDAsync          func(dst, src DevicePtr, n uint64, s Stream) Result
	cuMemcpyPeerAsync          func(dst DevicePtr, dstCtx Context, src DevicePtr, srcCtx Context, n uint64, s Stream) Result
	cuMemsetD32Async           func(dst DevicePtr, v uint32, n uint64, s Stream) Result
	cuModuleLoadData           func(m *Module, image unsafe.Pointer) Result
	cuModuleUnload             func(m Module) Result
	cuModuleGetFunction        func(f *Function, m Module, name *byte) Result
	cuFuncGetAttribute         func(v *int32, attr int32, f Function) Result
	cuLinkCreate               func(n uint32, opts *int32, vals *uintptr, st *LinkState) Result
	cuLinkAddData              func(st LinkState, typ int32, data unsafe.Pointer, size uint64, name *byte, n uint32, opts *int32, vals *unsafe.Pointer) Result
	cuLinkComplete             func(st LinkState, cubin *unsafe.Pointer, size *uint64) Result
	cuLinkDestroy              func(st LinkState) Result
	cuLaunchKernel             func(f Function, gx, gy, gz, bx, by, bz, shared uint32, s Stream, params *unsafe.Pointer, extra *unsafe.Pointer) Result
	cuGetErrorName             func(r Result, s **byte) Result
	cuGetErrorString           func(r Result, s **byte) Result
	cuOccupancyMaxActiveBlocks func(n *int32, f Function, block int32, shared uint64) Result
)

// Load opens libcuda.so.1, binds the API and calls cuInit(0). It is safe to call many times; the
// first call's result is kept. Without a driver it returns an error wrapping ErrNoDriver.
func Load() error {
	loadOnce.Do(func() { loadErr = load() })
	return loadErr
}

func load() (err error) {
	lib, err := purego.Dlopen(LibName, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNoDriver, err)
	}
	// RegisterLibFunc panics on a missing symbol; a driver that old is reported as an error.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("bind %s: %v: the NVIDIA driver is too old; install a driver that supports CUDA 12 or newer", LibName, r)
		}
	}()
	bind := func(fp any, name string) { purego.RegisterLibFunc(fp, lib, name) }
	bind(&cuInit, "cuInit")
	bind(&cuDriverGetVersion, "cuDriverGetVersion")
	bind(&cuDeviceGetCount, "cuDeviceGetCount")
	bind(&cuDeviceGet, "cuDeviceGet")
	bind(&cuDeviceGetName, "cuDeviceGetName")
	bind(&cuDeviceGetAttribute, "cuDeviceGetAttribute")
	bind(&cuDeviceTotalMem, "cuDeviceTotalMem_v2")
	bind(&cuDeviceGetUuid, "cuDeviceGetUuid_v2")
	bind(&cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
	bind(&cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")
	bind(&cuCtxSetCurrent, "cuCtxSetCurrent")
	bind(&cuCtxSynchronize, "cuCtxSynchronize")
	bind(&cuStreamCreate, "cuStreamCreate")
	bind(&cuStreamDestroy, "cuStreamDestroy_v2")
	bind(&cuStreamSynchronize, "cuStreamSynchronize")
	bind(&cuStreamQuery, "cuStreamQuery")
	bind(&cuStreamWaitEvent, "cuStreamWaitEvent")
	bind(&cuEventCreate, "cuEventCreate")
	bind(&cuEventRecord, "cuEventRecord")
	bind(&cuEventSynchronize, "cuEventSynchronize")
	bind(&cuEventQuery, "cuEventQuery")
	bind(&cuEventElapsedTime, "cuEventElapsedTime")
	bind(&cuEventDestroy, "cuEventDestroy_v2")
	bind(&cuMemAlloc, "cuMemAlloc_v2")
	bind(&cuMemFree, "cuMemFree_v2")
	bind(&cuMemGetInfo, "cuMemGetInfo_v2")
	bind(&cuMemAllocHost, "cuMemAllocHost_v2")
	bind(&cuMemFreeHost, "cuMemFreeHost")
	bind(&cuMemcpyHtoD, "cuMemcpyHtoD_v2")
	bind(&cuMemcpyDtoH, "cuMemcpyDtoH_v2")
	bind(&cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")
	bind(&cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")
	bind(&cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2")
	bind(&cuMemcpyPeerAsync, "cuMemcpyPeerAsync")
	bind(&cuMemsetD32Async, "cuMemsetD32Async")
	bind(&cuModuleLoadData, "cuModuleLoadData")
	bind(&cuModuleUnload, "cuModuleUnload")
	bind(&cuModuleGetFunction, "cuModuleGetFunction")
	bind(&cuFuncGetAttribute, "cuFuncGetAttribute")
	bind(&cuLinkCreate, "cuLinkCreate_v2")
	bind(&cuLinkAddData, "cuLinkAddData_v2")
	bind(&cuLinkComplete, "cuLinkComplete")
	bind(&cuLinkDestroy, "cuLinkDestroy")
	bind(&cuLaunchKernel, "cuLaunchKernel")
	bind(&cuGetErrorName, "cuGetErrorName")
	bind(&cuGetErrorString, "cuGetErrorString")
	bind(&cuOccupancyMaxActiveBlocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor")
	if r := cuInit(0); r != Success {
		return check("cuInit", r)
	}
	return nil
}

func cstr(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}

// check turns a CUresult into an *Error naming call, or nil on success.
func check(call string, r Result) error {
	if r == Success {
		return nil
	}
	e := &Error{Call: call, Code: r, Name: fmt.Sprintf("CUDA_ERROR_%d", int32(r))}
	if cuGetErrorName != nil {
		var s *byte
		if cuGetErrorName(r, &s) == Success {
			e.Name = cstr(s)
		}
		if cuGetErrorString(r, &s) == Success {
			e.Detail = cstr(s)
		}
	}
	return e
}

// DriverVersion returns the CUDA version the driver supports, e.g. 13000 for 13.0.
func DriverVersion() (int, error) {
	var v int32
	err := check("cuDriverGetVersion", cuDriverGetVersion(&v))
	return int(v), err
}

// DeviceCount returns the number of visible devices (CUDA_VISIBLE_DEVICES applies).
func DeviceCount() (int, error) {
	var n int32
	r := cuDeviceGetCount(&n)
	if r == ErrorNoDevice {
		return 0, nil
	}
	return int(n), check("cuDeviceGetCount", r)
}

// Device is a CUdevice ordinal as the driver numbers visible devices.
type Device int32

// DeviceGet returns the device with the given ordinal.
func DeviceGet(ordinal int) (Device, error) {
	var d int32
	err := check("cuDeviceGet", cuDeviceGet(&d, int32(ordinal)))
	return Device(d), err
}

// Name returns the device's product name.
func (d Device) Name() (string, error) {
	buf := make([]byte, 256)
	if err := check("cuDeviceGetName", cuDeviceGetName(&buf[0], int32(len(buf)), int32(d))); err != nil {
		return "", err
	}
	return cstr(&buf[0]), nil
}

// Attribute returns a device attribute (one of the Attr constants).
func (d Device) Attribute(attr int) (int, error) {
	var v int32
	err := check("cuDeviceGetAttribute", cuDeviceGetAttribute(&v, int32(attr), int32(d)))
	return int(v), err
}

// TotalMem returns the device's memory in bytes.
func (d Device) TotalMem() (uint64, error) {
	var b uint64
	err := check("cuDeviceTotalMem_v2", cuDeviceTotalMem(&b, int32(d)))
	return b, err
}

// UUID returns the device's UUID formatted as nvidia-smi does ("GPU-xxxxxxxx-xxxx-...").
func (d Device) UUID() (string, error) {
	var u [16]byte
	if err := check("cuDeviceGetUuid_v2", cuDeviceGetUuid(&u, int32(d))); err != nil {
		return "", err
	}
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]), nil
}

// PrimaryCtxRetain retains the device's primary context.
func (d Device) PrimaryCtxRetain() (Context, error) {
	var c Context
	err := check("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&c, int32(d)))
	return c, err
}

// PrimaryCtxRelease releases the primary context retained by PrimaryCtxRetain.
func (d Device) PrimaryCtxRelease() error {
	return check("cuDevicePrimaryCtxRelease_v2", cuDevicePrimaryCtxRelease(int32(d)))
}

// SetCurrent makes c the calling OS thread's current context.
func SetCurrent(c Context) error { return check("cuCtxSetCurrent", cuCtxSetCurrent(c)) }

// CtxSynchronize waits for all work of the current context.
func CtxSynchronize() error { return check("cuCtxSynchronize", cuCtxSynchronize()) }

// StreamNonBlocking is the CU_STREAM_NON_BLOCKING flag.
const StreamNonBlocking = 1

// StreamCreate creates a stream.
func StreamCreate(flags uint32) (Stream, error) {
	var s Stream
	err := check("cuStreamCreate", cuStreamCreate(&s, flags))
	return s, err
}

// Destroy destroys the stream.
func (s Stream) Destroy() error { return check("cuStreamDestroy_v2", cuStreamDestroy(s)) }

// Synchronize waits until the stream's work is done.
func (s Stream) Synchronize() error {
	return check("cuStreamSynchronize", cuStreamSynchronize(s))
}

// Query reports whether the stream's work is done.
func (s Stream) Query() (bool, error) {
	r := cuStreamQuery(s)
	if r == ErrorNotReady {
		return false, nil
	}
	return r == Success, check("cuStreamQuery", r)
}

// WaitEvent makes the stream's later work wait for e.
func (s Stream) WaitEvent(e Event) error {
	return check("cuStreamWaitEvent", cuStreamWaitEvent(s, e, 0))
}

// EventDefault and EventDisableTiming are cuEventCreate flags.
const (
	EventDefault       = 0
	EventDisableTiming = 2
)

// EventCreate creates an event.
func EventCreate(flags uint32) (Event, error) {
	var e Event
	err := check("cuEventCreate", cuEventCreate(&e, flags))
	return e, err
}

// Record records the event on stream s.
func (e Event) Record(s Stream) error { return check("cuEventRecord", cuEventRecord(e, s)) }

// Synchronize waits for the event.
func (e Event) Synchronize() error { return check("cuEventSynchronize", cuEventSynchronize(e)) }

// Query reports whether the event has completed.
func (e Event) Query() (bool, error) {
	r := cuEventQuery(e)
	if r == ErrorNotReady {
		return false, nil
	}
	return r == Success, check("cuEventQuery", r)
}

// Destroy destroys the event.
func (e Event) Destroy() error { return check("cuEventDestroy_v2", cuEventDestroy(e)) }

// ElapsedMs returns the milliseconds between two recorded events.
func ElapsedMs(start, end Event) (float32, error) {
	var ms float32
	err := check("cuEventElapsedTime", cuEventElapsedTime(&ms, start, end))
	return ms, err
}

// MemAlloc allocates n bytes of device memory.
func MemAlloc(n uint64) (DevicePtr, error) {
	var p DevicePtr
	err := check("cuMemAlloc_v2", cuMemAlloc(&p, n))
	return p, err
}

// MemFree frees device memory.
func MemFree(p DevicePtr) error { return check("cuMemFree_v2", cuMemFree(p)) }

// MemGetInfo returns the free and total device memory of the current context's device.
func MemGetInfo() (free, total uint64, err error) {
	err = check("cuMemGetInfo_v2", cuMemGetInfo(&free, &total))
	return free, total, err
}

// MemAllocHost allocates n bytes of page-locked host memory.
func MemAllocHost(n uint64) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := check("cuMemAllocHost_v2", cuMemAllocHost(&p, n))
	return p, err
}

// MemFreeHost frees page-locked host memory.
func MemFreeHost(p unsafe.Pointer) error { return check("cuMemFreeHost", cuMemFreeHost(p)) }

// MemcpyHtoD copies n bytes from host to device, synchronously.
func MemcpyHtoD(dst DevicePtr, src unsafe.Pointer, n uint64) error {
	return check("cuMemcpyHtoD_v2", cuMemcpyHtoD(dst, src, n))
}

// MemcpyDtoH copies n bytes from device to host, synchronously.
func MemcpyDtoH(dst unsafe.Pointer, src DevicePtr, n uint64) error {
	return check("cuMemcpyDtoH_v2", cuMemcpyDtoH(dst, src, n))
}

// MemcpyHtoDAsync copies n bytes from (pinned) host memory to the device on stream s.
func MemcpyHtoDAsync(dst DevicePtr, src unsafe.Pointer, n uint64, s Stream) error {
	return check("cuMemcpyHtoDAsync_v2", cuMemcpyHtoDAsync(dst, src, n, s))
}

// MemcpyDtoHAsync copies n bytes from the device to (pinned) host memory on stream s.
func MemcpyDtoHAsync(dst unsafe.Pointer, src DevicePtr, n uint64, s Stream) error {
	return check("cuMemcpyDtoHAsync_v2", cuMemcpyDtoHAsync(dst, src, n, s))
}

// MemcpyDtoDAsync copies n bytes between device buffers on stream s.
func MemcpyDtoDAsync(dst, src DevicePtr, n uint64, s Stream) error {
	return check("cuMemcpyDtoDAsync_v2", cuMemcpyDtoDAsync(dst, src, n, s))
}

// MemcpyPeerAsync copies n bytes from src in context srcCtx (another GPU's) to dst in context
// dstCtx on stream s: directly over NVLink or PCIe where the GPUs can reach each other, else
// staged by the driver.
func MemcpyPeerAsync(dst DevicePtr, dstCtx Context, src DevicePtr, srcCtx Context, n uint64, s Stream) error {
	return check("cuMemcpyPeerAsync", cuMemcpyPeerAsync(dst, dstCtx, src, srcCtx, n, s))
}

// MemsetD32Async sets n 32-bit words at dst to v on stream s.
func MemsetD32Async(dst DevicePtr, v uint32, n uint64, s Stream) error {
	return check("cuMemsetD32Async", cuMemsetD32Async(dst, v, n, s))
}

// ModuleLoadData loads a module from a cubin, fatbin or NUL-terminated PTX image.
func ModuleLoadData(image []byte) (Module, error) {
	var m Module
	err := check("cuModuleLoadData", cuModuleLoadData(&m, unsafe.Pointer(&image[0])))
	return m, err
}

// Unload unloads the module.
func (m Module) Unload() error { return check("cuModuleUnload", cuModuleUnload(m)) }

// Function returns the kernel named name.
func (m Module) Function(name string) (Function, error) {
	var f Function
	b := append([]byte(name), 0)
	if err := check("cuModuleGetFunction", cuModuleGetFunction(&f, m, &b[0])); err != nil {
		return 0, fmt.Errorf("kernel %q: %w", name, err)
	}
	return f, nil
}

// Attribute returns a function attribute (one of the FuncAttr constants).
func (f Function) Attribute(attr int) (int, error) {
	var v int32
	err := check("cuFuncGetAttribute", cuFuncGetAttribute(&v, int32(attr), f))
	return int(v), err
}

// MaxActiveBlocksPerSM returns how many blocks of the given size fit on one multiprocessor.
func (f Function) MaxActiveBlocksPerSM(block int, shared uint64) (int, error) {
	var n int32
	err := check("cuOccupancyMaxActiveBlocksPerMultiprocessor", cuOccupancyMaxActiveBlocks(&n, f, int32(block), shared))
	return int(n), err
}

// Launch launches f with the given grid and block shape on stream s. params holds one pointer
// per kernel parameter, each pointing at the parameter's value.
func (f Function) Launch(grid, block [3]uint32, shared uint32, s Stream, params []unsafe.Pointer) error {
	var pp *unsafe.Pointer
	if len(params) > 0 {
		pp = &params[0]
	}
	return check("cuLaunchKernel", cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, s, pp, nil))
}

// LinkPTX JIT-links PTX modules (each a complete PTX text) into one cubin with the driver's
// linker (cuLinkCreate_v2, cuLinkAddData_v2, cuLinkComplete) and loads it as a module. On a
// failure the error holds the linker's log.
func LinkPTX(names []string, ptx [][]byte) (Module, error) {
	return LinkPTXMaxRegisters(names, ptx, 0)
}

// LinkPTXMaxRegisters is LinkPTX with the registers per thread of every function in the link
// capped at maxRegs (0: the JIT's choice), callees included: an entry can hold no fewer
// registers than the functions it calls.
func LinkPTXMaxRegisters(names []string, ptx [][]byte, maxRegs int) (Module, error) {
	const logSize = 1 << 15
	errLog := make([]byte, logSize)
	infoLog := make([]byte, logSize)
	opts := []int32{jitErrorLogBuffer, jitErrorLogBufferSize, jitInfoLogBuffer, jitInfoLogBufferSizeBytes}
	// The option values are pointers or integers cast to pointers; the Go heap does not move, and
	// the buffers stay alive until the state is destroyed (KeepAlive below).
	vals := []uintptr{uintptr(unsafe.Pointer(&errLog[0])), logSize, uintptr(unsafe.Pointer(&infoLog[0])), logSize}
	if maxRegs > 0 {
		opts = append(opts, jitMaxRegisters)
		vals = append(vals, uintptr(maxRegs))
	}
	defer runtime.KeepAlive(infoLog)
	defer runtime.KeepAlive(errLog)
	var st LinkState
	if err := check("cuLinkCreate_v2", cuLinkCreate(uint32(len(opts)), &opts[0], &vals[0], &st)); err != nil {
		return 0, err
	}
	defer cuLinkDestroy(st)
	withLog := func(err error) error {
		if l := cstr(&errLog[0]); l != "" {
			return fmt.Errorf("%w\n%s", err, l)
		}
		return err
	}
	for i, p := range ptx {
		data := append(append([]byte(nil), p...), 0)
		name := append([]byte(names[i]), 0)
		if err := check("cuLinkAddData_v2", cuLinkAddData(st, jitInputPTX, unsafe.Pointer(&data[0]), uint64(len(data)), &name[0], 0, nil, nil)); err != nil {
			return 0, fmt.Errorf("add %s: %w", names[i], withLog(err))
		}
	}
	var cubin unsafe.Pointer
	var size uint64
	if err := check("cuLinkComplete", cuLinkComplete(st, &cubin, &size)); err != nil {
		return 0, withLog(err)
	}
	var m Module
	if err := check("cuModuleLoadData", cuModuleLoadData(&m, cubin)); err != nil {
		return 0, err
	}
	return m, nil
}
