package cufft

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ebitengine/purego"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
)

// ErrNoLibrary is returned (wrapped) by Load when cuFFT cannot be opened.
var ErrNoLibrary = errors.New("cuFFT not found")

// Library names tried, newest first (cuFFT 12 ships with CUDA 13 and CUDA 12.x; 11 with 11.x).
var names = []string{"libcufft.so", "libcufft.so.12", "libcufft.so.13", "libcufft.so.11"}

type (
	handle  int32
	result  int32
	fftType int32
)

// cufftType values.
const (
	typeD2Z fftType = 0x6a
	typeZ2D fftType = 0x6c
	typeZ2Z fftType = 0x69

	dirForward int32 = -1
	dirInverse int32 = 1
)

var (
	loadOnce sync.Once
	loadErr  error
	loaded   string

	planMany  func(p *handle, rank int32, n *int32, inembed *int32, istride, idist int32, onembed *int32, ostride, odist int32, t fftType, batch int32) result
	create    func(p *handle) result
	autoAlloc func(p handle, auto int32) result
	makeMany  func(p handle, rank int32, n *int32, inembed *int32, istride, idist int32, onembed *int32, ostride, odist int32, t fftType, batch int32, work *uint64) result
	// makeMany64 is nil where the library lacks it (the four steps' plans whose elements lie
	// over 2^31 apart need it).
	makeMany64 func(p handle, rank int32, n *int64, inembed *int64, istride, idist int64, onembed *int64, ostride, odist int64, t fftType, batch int64, work *uint64) result
	workArea   func(p handle, area driver.DevicePtr) result
	setStream  func(p handle, s driver.Stream) result
	destroy    func(p handle) result
	execZ2Z    func(p handle, in, out driver.DevicePtr, dir int32) result
	execD2Z    func(p handle, in, out driver.DevicePtr) result
	execZ2D    func(p handle, in, out driver.DevicePtr) result
)

// Load opens the CUDA driver and cuFFT and binds the calls used here; the first call's result
// is kept.
func Load() error {
	loadOnce.Do(func() { loadErr = load() })
	return loadErr
}

// Library returns the name of the library Load opened.
func Library() string { return loaded }

func load() (err error) {
	if err := driver.Load(); err != nil {
		return fmt.Errorf("%w: %v", ErrNoLibrary, err)
	}
	var lib uintptr
	var errs []string
	for _, n := range names {
		if lib, err = purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
			loaded = n
			break
		}
		errs = append(errs, err.Error())
	}
	if loaded == "" {
		return fmt.Errorf("%w: tried %v (%v); install the CUDA toolkit's cuFFT or put it on the loader path", ErrNoLibrary, names, errs)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: bind %s: %v", ErrNoLibrary, loaded, r)
			loaded = ""
		}
	}()
	purego.RegisterLibFunc(&planMany, lib, "cufftPlanMany")
	purego.RegisterLibFunc(&setStream, lib, "cufftSetStream")
	purego.RegisterLibFunc(&create, lib, "cufftCreate")
	purego.RegisterLibFunc(&autoAlloc, lib, "cufftSetAutoAllocation")
	purego.RegisterLibFunc(&makeMany, lib, "cufftMakePlanMany")
	purego.RegisterLibFunc(&workArea, lib, "cufftSetWorkArea")
	if _, err := purego.Dlsym(lib, "cufftMakePlanMany64"); err == nil {
		purego.RegisterLibFunc(&makeMany64, lib, "cufftMakePlanMany64")
	}
	purego.RegisterLibFunc(&destroy, lib, "cufftDestroy")
	purego.RegisterLibFunc(&execZ2Z, lib, "cufftExecZ2Z")
	purego.RegisterLibFunc(&execD2Z, lib, "cufftExecD2Z")
	purego.RegisterLibFunc(&execZ2D, lib, "cufftExecZ2D")
	return nil
}

// cufftResult names, for errors.
var resultNames = map[result]string{
	1: "CUFFT_INVALID_PLAN", 2: "CUFFT_ALLOC_FAILED", 3: "CUFFT_INVALID_TYPE", 4: "CUFFT_INVALID_VALUE",
	5: "CUFFT_INTERNAL_ERROR", 6: "CUFFT_EXEC_FAILED", 7: "CUFFT_SETUP_FAILED", 8: "CUFFT_INVALID_SIZE",
	9: "CUFFT_UNALIGNED_DATA", 11: "CUFFT_INVALID_DEVICE", 13: "CUFFT_NO_WORKSPACE",
	14: "CUFFT_NOT_IMPLEMENTED", 16: "CUFFT_NOT_SUPPORTED",
}

func check(call string, r result) error {
	if r == 0 {
		return nil
	}
	name := resultNames[r]
	if name == "" {
		name = "status"
	}
	return fmt.Errorf("%s: %s (%d)", call, name, int32(r))
}
