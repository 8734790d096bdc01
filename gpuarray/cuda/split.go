package cuda

import "sync"

// eachDevice deals n tasks to devs in contiguous runs of ceil(n/len(devs)) (the last ones
// shorter or empty) and calls f for each device's run [lo, hi) on its own goroutine. It
// returns the error of the first device, in device order, whose run failed.
func eachDevice(devs []*Device, n int, f func(d *Device, lo, hi int) error) error {
	per := (n + len(devs) - 1) / len(devs)
	errs := make([]error, len(devs))
	var wg sync.WaitGroup
	for di, d := range devs {
		lo, hi := di*per, min(n, (di+1)*per)
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[di] = f(d, lo, hi)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
