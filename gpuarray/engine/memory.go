package engine

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
)

var (
	memOnce    sync.Once
	memDefault int64
)

// DefaultMemoryLimit is half the machine's memory (8 GiB when it cannot be read): the default of
// gpuarray.MemoryLimit, and the bound of the host copies HostBuffer maps.
func DefaultMemoryLimit() int64 {
	memOnce.Do(func() {
		memDefault = 8 << 30
		f, err := os.Open("/proc/meminfo")
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) >= 2 && fields[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
					memDefault = kb * 1024 / 2
				}
			}
		}
	})
	return memDefault
}
