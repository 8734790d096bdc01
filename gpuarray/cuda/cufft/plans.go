package cufft

import (
	"fmt"
	"os"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
)

// Plans are cached per device and layout (issue 32): cufftPlanMany of a long transform took
// milliseconds a call (its own cudaMalloc of the work area, and cufftDestroy's cudaFree, which
// waits for the device), as long as the transform itself for 1e8 points. A cached plan has no
// work area of its own (cufftSetAutoAllocation off): each execution takes one from the device's
// pool and gives it back once the stream is done with it, so the cache holds only the plans'
// small tables, never a transform's worth of device memory.

// planKey is the layout a plan transforms: everything cufftMakePlanMany is given.
type planKey struct {
	dev              *cuda.Device
	t                fftType
	n, inLen, outLen int64
	stride, idist    int64
	odist, batch     int64
	wide             bool // planned with cufftMakePlanMany64 (the four steps' long extents)
}

// cachedPlan is a plan made once and the work area its executions need.
type cachedPlan struct {
	p    handle
	work uint64
	used uint64 // when it was last used (planCache.clock)
}

// maxPlans bounds the plans kept per device; the least recently used one goes first.
const maxPlans = 8

// planCaching is on unless GPUNOTES_CUFFT_PLAN_CACHE=0 (to measure the uncached path).
var planCaching = os.Getenv("GPUNOTES_CUFFT_PLAN_CACHE") != "0"

var planCache = struct {
	sync.Mutex
	m     map[planKey]*cachedPlan
	clock uint64
}{m: map[planKey]*cachedPlan{}}

// planFor returns the plan of key, made on first use (on the device goroutine of key.dev).
func planFor(key planKey) (*cachedPlan, error) {
	planCache.Lock()
	defer planCache.Unlock()
	planCache.clock++
	if cp, ok := planCache.m[key]; ok {
		cp.used = planCache.clock
		return cp, nil
	}
	var p handle
	if err := check("cufftCreate", create(&p)); err != nil {
		return nil, err
	}
	if err := check("cufftSetAutoAllocation", autoAlloc(p, 0)); err != nil {
		destroy(p)
		return nil, err
	}
	var work uint64
	if key.wide {
		if makeMany64 == nil {
			destroy(p)
			return nil, fmt.Errorf("cufft: %s has no cufftMakePlanMany64 for transforms whose elements lie over 2^31 apart", loaded)
		}
		nn := []int64{key.n}
		inEmbed, outEmbed := []int64{key.inLen}, []int64{key.outLen}
		if err := check("cufftMakePlanMany64", makeMany64(p, 1, &nn[0], &inEmbed[0], key.stride, key.idist, &outEmbed[0], key.stride, key.odist, key.t, key.batch, &work)); err != nil {
			destroy(p)
			return nil, err
		}
	} else {
		nn := []int32{int32(key.n)}
		inEmbed, outEmbed := []int32{int32(key.inLen)}, []int32{int32(key.outLen)}
		if err := check("cufftMakePlanMany", makeMany(p, 1, &nn[0], &inEmbed[0], int32(key.stride), int32(key.idist), &outEmbed[0], int32(key.stride), int32(key.odist), key.t, int32(key.batch), &work)); err != nil {
			destroy(p)
			return nil, err
		}
	}
	// Evict the least recently used plan of this device beyond the bound.
	var mine []planKey
	for k := range planCache.m {
		if k.dev == key.dev {
			mine = append(mine, k)
		}
	}
	if len(mine) >= maxPlans {
		old := mine[0]
		for _, k := range mine[1:] {
			if planCache.m[k].used < planCache.m[old].used {
				old = k
			}
		}
		destroy(planCache.m[old].p)
		delete(planCache.m, old)
	}
	cp := &cachedPlan{p: p, work: work, used: planCache.clock}
	planCache.m[key] = cp
	return cp, nil
}

// execCached runs exec on the cached plan of key, rounds times (round r from its offsets), with
// a work area from d's pool that goes back once d's stream has done the transforms. Call it on
// the device goroutine.
func execCached(d *cuda.Device, key planKey, rounds int, at func(r int) (in, out driver.DevicePtr), exec func(p handle, in, out driver.DevicePtr) result, stop func() error) error {
	cp, err := planFor(key)
	if err != nil {
		return err
	}
	var area driver.DevicePtr
	if cp.work > 0 {
		if area, err = d.Pool().Alloc(cp.work); err != nil {
			return fmt.Errorf("cufft: work area of %d bytes: %w", cp.work, err)
		}
		// The area goes back to the pool only after the stream is done with it: the next
		// allocation may hand it to a copy that does not wait for the stream.
		defer func() {
			_ = d.Stream().Synchronize()
			d.Pool().Free(area)
		}()
		if err := check("cufftSetWorkArea", workArea(cp.p, area)); err != nil {
			return err
		}
	}
	if err := check("cufftSetStream", setStream(cp.p, d.Stream())); err != nil {
		return err
	}
	for r := 0; r < rounds; r++ {
		if err := stop(); err != nil {
			return err
		}
		in, out := at(r)
		if err := check("cufftExec", exec(cp.p, in, out)); err != nil {
			return err
		}
	}
	return nil
}
