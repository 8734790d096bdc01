package cuda

import (
	"context"
	"fmt"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/kernels"
)

// ErrNoDriver is returned (wrapped) when there is no NVIDIA driver on this machine.
var ErrNoDriver = driver.ErrNoDriver

// capRE matches the register directives of a generated entry (gen.capDirectives).
var capRE = regexp.MustCompile(`(?m)^\.(maxnreg|minnctapersm) \d+\n`)

// DeviceInfo describes one visible GPU (CUDA_VISIBLE_DEVICES applies; Index is the ordinal
// among visible devices).
type DeviceInfo struct {
	Index        int
	Name         string
	UUID         string
	Major, Minor int // compute capability
	SMs          int
	TotalMem     uint64
}

// Devices lists the visible GPUs. Without a driver it returns an error wrapping ErrNoDriver;
// with a driver but no GPU, an empty list.
func Devices() ([]DeviceInfo, error) {
	if err := driver.Load(); err != nil {
		if driver.IsCode(err, driver.ErrorNoDevice) {
			return nil, nil
		}
		return nil, err
	}
	n, err := driver.DeviceCount()
	if err != nil {
		return nil, err
	}
	out := make([]DeviceInfo, 0, n)
	for i := 0; i < n; i++ {
		d, err := driver.DeviceGet(i)
		if err != nil {
			return nil, err
		}
		info := DeviceInfo{Index: i}
		if info.Name, err = d.Name(); err != nil {
			return nil, err
		}
		if info.UUID, err = d.UUID(); err != nil {
			return nil, err
		}
		if info.Major, err = d.Attribute(driver.AttrComputeCapabilityMajor); err != nil {
			return nil, err
		}
		if info.Minor, err = d.Attribute(driver.AttrComputeCapabilityMinor); err != nil {
			return nil, err
		}
		if info.SMs, err = d.Attribute(driver.AttrMultiprocessorCount); err != nil {
			return nil, err
		}
		if info.TotalMem, err = d.TotalMem(); err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// Device is an open GPU: a goroutine locked to one OS thread with the device's primary context
// current, a stream, a memory pool and the cache of linked kernels. Open returns one Device per
// index for the life of the process.
type Device struct {
	Info   DeviceInfo
	jobs   chan func()
	ctx    driver.Context // the primary context, current on the device goroutine
	stream driver.Stream
	pool   *Pool
	lib    *ptx.Library
	libPTX []byte
	parts  *ptx.LibParts              // libPTX cut up, for linking kernels with what they call
	mods   map[string]driver.Function // by spec key; used on the device goroutine only
	libMod driver.Module              // the library linked alone, for LibFunction

	pinned     []uint64      // pinned host staging for results
	xfer       [2][]float64  // pinned double buffer of CopyToHost and CopyToDevice
	copyStream driver.Stream // CopyStream, created on first use
	pinnedPtr  unsafe.Pointer

	opMu     sync.Mutex
	operands map[operandKey]driver.DevicePtr // a call stage's further operands (operands.go)
}

var (
	openMu sync.Mutex
	opened = map[int]*Device{}
)

// Open returns the device with the given visible index, starting its goroutine on first use.
func Open(index int) (*Device, error) {
	openMu.Lock()
	defer openMu.Unlock()
	if d, ok := opened[index]; ok {
		return d, nil
	}
	devs, err := Devices()
	if err != nil {
		return nil, err
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("no NVIDIA GPU is visible (CUDA_VISIBLE_DEVICES=%q)", os.Getenv("CUDA_VISIBLE_DEVICES"))
	}
	if index < 0 || index >= len(devs) {
		return nil, fmt.Errorf("GPU %d does not exist: %d visible (indices 0..%d; CUDA_VISIBLE_DEVICES=%q)", index, len(devs), len(devs)-1, os.Getenv("CUDA_VISIBLE_DEVICES"))
	}
	d := &Device{Info: devs[index], jobs: make(chan func()), mods: map[string]driver.Function{}}
	fl := kernels.FlavourFor(d.Info.Major, d.Info.Minor)
	if d.libPTX, err = libraryPTX(fl); err != nil {
		return nil, err
	}
	if d.lib, err = ptx.ParseLibrary(string(d.libPTX)); err != nil {
		return nil, err
	}
	d.parts = ptx.SplitLibrary(string(d.libPTX))
	ready := make(chan error)
	go d.loop(ready)
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("open GPU %d (%s): %w", index, d.Info.Name, err)
	}
	opened[index] = d
	return d, nil
}

// libraryPTX returns the device library; GPUNOTES_KERNELS_PTX names a directory to read it
// from instead of the embedded copy (for trying new kernels without rebuilding).
func libraryPTX(flavour string) ([]byte, error) {
	if dir := os.Getenv("GPUNOTES_KERNELS_PTX"); dir != "" {
		b, err := os.ReadFile(dir + "/lib_" + flavour + ".ptx")
		if err != nil {
			return nil, fmt.Errorf("device library from GPUNOTES_KERNELS_PTX: %w", err)
		}
		return b, nil
	}
	return kernels.LibPTX(flavour)
}

// loop runs every CUDA call of the device on one locked OS thread.
func (d *Device) loop(ready chan<- error) {
	runtime.LockOSThread()
	dev, err := driver.DeviceGet(d.Info.Index)
	var ctx driver.Context
	if err == nil {
		ctx, err = dev.PrimaryCtxRetain()
	}
	if err == nil {
		d.ctx = ctx
		err = driver.SetCurrent(ctx)
	}
	if err == nil {
		d.stream, err = driver.StreamCreate(driver.StreamNonBlocking)
	}
	if err == nil {
		d.pool, err = newPool(d.Info.TotalMem, d.stream)
	}
	ready <- err
	if err != nil {
		runtime.UnlockOSThread()
		return
	}
	for job := range d.jobs {
		job()
	}
}

// Do runs fn on the device's goroutine (where its context is current) and returns fn's error.
// It returns ctx.Err() without running fn when ctx ends first.
func (d *Device) Do(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	job := func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("GPU %d: panic in device call: %v", d.Info.Index, r)
			}
		}()
		if err := ctx.Err(); err != nil {
			done <- err
			return
		}
		done <- fn()
	}
	select {
	case d.jobs <- job:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-done
}

// Pool returns the device's memory pool (use it on the device goroutine only, inside Do).
func (d *Device) Pool() *Pool { return d.pool }

// Stream returns the device's stream.
func (d *Device) Stream() driver.Stream { return d.stream }

// kernel returns the linked kernel for s, generating and linking it on first use. It must run
// on the device goroutine.
func (d *Device) kernel(s *Spec) (driver.Function, error) {
	key := s.Key()
	if f, ok := d.mods[key]; ok {
		return f, nil
	}
	text, name, err := ptx.Generate(s, d.lib)
	if err != nil {
		return 0, err
	}
	if dir := os.Getenv("GPUNOTES_PTX_DUMP"); dir != "" {
		// For reading what the JIT makes of a kernel (ptxas -v, cuobjdump -res-usage).
		if err := os.WriteFile(filepath.Join(dir, name+".ptx"), []byte(text), 0o644); err != nil {
			Trace("GPUNOTES_PTX_DUMP: %v", err)
		}
	}
	mod, err := driver.LinkPTXMaxRegisters([]string{"gpunotes_lib.ptx", name + ".ptx"}, [][]byte{d.parts.ForKernel(text), []byte(text)}, ptx.MaxNReg)
	if err != nil && capRE.MatchString(text) {
		// A register cap below what a called library function holds is refused at link
		// time; the kernel is correct without it, only slower.
		Trace("kernel %s: linked without its register cap (%v)", name, err)
		text = capRE.ReplaceAllString(text, "")
		mod, err = driver.LinkPTXMaxRegisters([]string{"gpunotes_lib.ptx", name + ".ptx"}, [][]byte{d.parts.ForKernel(text), []byte(text)}, ptx.MaxNReg)
	}
	if err != nil {
		if driver.IsCode(err, driver.ErrorUnsupportedPTX) {
			v, _ := driver.DriverVersion()
			return 0, fmt.Errorf("link kernel %s: the NVIDIA driver (CUDA %d.%d) is too old for this PTX (version %s): update the driver: %w", name, v/1000, v%1000/10, d.lib.Version(), err)
		}
		return 0, fmt.Errorf("link kernel %s: %w", name, err)
	}
	f, err := mod.Function(name)
	if err != nil {
		return 0, err
	}
	d.mods[key] = f
	if traceRuns {
		// What the JIT made of it: registers and local memory per thread, and the blocks an SM
		// holds, which bound how much work is in flight.
		regs, _ := f.Attribute(driver.FuncAttrNumRegs)
		local, _ := f.Attribute(driver.FuncAttrLocalSizeBytes)
		blocks, _ := f.MaxActiveBlocksPerSM(BlockSize, 0)
		Trace("kernel %s (%d nodes, %d leaves, reduce %v): %d registers, %d bytes local, %d blocks of %d threads per SM", name, len(s.Nodes), s.Leaves(), s.Reduce, regs, local, blocks, BlockSize)
	}
	return f, nil
}

// LibFunction returns a __global__ kernel of the device library (kernels/lib.cu) by name,
// linking the library once. Call it on the device goroutine (inside Do).
func (d *Device) LibFunction(name string) (driver.Function, error) {
	key := "lib:" + name
	if f, ok := d.mods[key]; ok {
		return f, nil
	}
	if d.libMod == 0 {
		mod, err := driver.LinkPTX([]string{"gpunotes_lib.ptx"}, [][]byte{d.libPTX})
		if err != nil {
			return 0, fmt.Errorf("link the device library: %w", err)
		}
		d.libMod = mod
	}
	f, err := d.libMod.Function(name)
	if err != nil {
		return 0, err
	}
	d.mods[key] = f
	return f, nil
}

// KernelPTX returns the PTX that would be generated for s on this device (for inspection).
func (d *Device) KernelPTX(s *Spec) (string, error) {
	text, _, err := ptx.Generate(s, d.lib)
	return text, err
}
