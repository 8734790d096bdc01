package cuda

import (
	"fmt"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
)

// generated returns the kernel name of a module gen generates, linked the first time and kept
// in d.mods after (on the device goroutine).
func (d *Device) generated(name string, gen func() (string, error)) (driver.Function, error) {
	if f, ok := d.mods[name]; ok {
		return f, nil
	}
	ptx, err := gen()
	if err != nil {
		return 0, err
	}
	mod, err := driver.LinkPTX([]string{name + ".ptx"}, [][]byte{[]byte(ptx)})
	if err != nil {
		return 0, fmt.Errorf("link kernel %s: %w", name, err)
	}
	f, err := mod.Function(name)
	if err != nil {
		return 0, err
	}
	d.mods[name] = f
	return f, nil
}

// launchWords launches f on a grid of blocks blocks of BlockSize threads on d's stream, its
// parameters the 64-bit words args.
func (d *Device) launchWords(f driver.Function, name string, blocks uint32, args ...uint64) error {
	params := make([]unsafe.Pointer, len(args))
	for i := range args {
		params[i] = unsafe.Pointer(&args[i])
	}
	if err := f.Launch([3]uint32{blocks, 1, 1}, [3]uint32{BlockSize, 1, 1}, 0, d.stream, params); err != nil {
		return fmt.Errorf("kernel %s (%d blocks): %w", name, blocks, err)
	}
	return nil
}

// gridBlocks is the grid of a kernel whose threads loop over n elements: one thread per
// element up to maxGatherBlocks blocks.
func gridBlocks(n int64) uint32 { return uint32(min((n+BlockSize-1)/BlockSize, maxGatherBlocks)) }
