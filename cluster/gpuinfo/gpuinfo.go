// Package gpuinfo discovers NVIDIA GPUs through NVML (go-nvml, which loads libnvidia-ml at run
// time): names, UUIDs, memory, utilization, temperature, power, PCI bus ids, CPU affinity,
// NVLink peers and MIG instances. Devices are listed in PCI bus order, as CUDA numbers them
// with CUDA_DEVICE_ORDER=PCI_BUS_ID. Without the library or without GPUs, discovery reports
// ErrNoNVML or an empty list, and callers fall back to CPU-only work.
package gpuinfo

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrNoNVML is returned when the NVML library cannot be loaded or initialized (no NVIDIA
// driver on this machine).
var ErrNoNVML = errors.New("NVML not available (no NVIDIA driver)")

// GPU describes one physical GPU.
type GPU struct {
	Index        int      // position in PCI bus order (the CUDA ordinal with PCI_BUS_ID order)
	Name         string   // product name, e.g. "NVIDIA H100 80GB HBM3"
	UUID         string   // "GPU-…"
	PCIBusID     string   // "0000:18:00.0"
	MemoryTotal  uint64   // bytes
	MemoryUsed   uint64   // bytes
	Utilization  int      // percent busy over the last sample period; -1 when unknown
	TemperatureC int      // degrees Celsius; -1 when unknown
	PowerW       float64  // watts drawn; -1 when unknown
	CPUAffinity  []int    // CPUs close to the GPU (empty when unknown)
	NVLinkPeers  []string // PCI bus ids of the devices at the other end of active NVLinks
	MIGEnabled   bool     // MIG mode is on (current mode)
	MIG          []MIG    // the MIG instances when MIGEnabled
}

// MIG describes one MIG instance of a GPU.
type MIG struct {
	Index       int    // position among its GPU's instances
	UUID        string // "MIG-…"
	MemoryTotal uint64 // bytes
	MemoryUsed  uint64 // bytes
}

// Stats are the fast-changing figures of a GPU or MIG instance.
type Stats struct {
	MemoryTotal, MemoryUsed uint64
	Utilization             int // percent; -1 when unknown
	TemperatureC            int // -1 when unknown
	PowerW                  float64
}

var (
	mu     sync.Mutex
	lib    nvml.Interface
	inited bool
	initOK bool
)

// use returns the process's NVML library, initialized once and kept open.
func use() (nvml.Interface, error) {
	mu.Lock()
	defer mu.Unlock()
	if !inited {
		inited = true
		l := nvml.New()
		if ret := safeInit(l); ret == nvml.SUCCESS {
			lib, initOK = l, true
		}
	}
	if !initOK {
		return nil, ErrNoNVML
	}
	return lib, nil
}

// safeInit calls Init, turning a panic of the binding into a failure.
func safeInit(l nvml.Interface) (ret nvml.Return) {
	defer func() {
		if recover() != nil {
			ret = nvml.ERROR_LIBRARY_NOT_FOUND
		}
	}()
	return l.Init()
}

// Discover lists this machine's GPUs in PCI bus order. It returns ErrNoNVML (wrapped) when
// NVML cannot be loaded.
func Discover() ([]GPU, error) {
	l, err := use()
	if err != nil {
		return nil, fmt.Errorf("discover GPUs: %w", err)
	}
	return DiscoverWith(l)
}

// DiscoverWith lists the GPUs that an initialized NVML interface reports, in PCI bus order.
// Figures a device does not support are left at their "unknown" values.
func DiscoverWith(l nvml.Interface) ([]GPU, error) {
	n, ret := l.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("discover GPUs: device count: %v", ret)
	}
	gpus := make([]GPU, 0, n)
	for i := 0; i < n; i++ {
		d, ret := l.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("discover GPUs: device %d: %v", i, ret)
		}
		g, err := describe(d)
		if err != nil {
			return nil, fmt.Errorf("discover GPUs: device %d: %w", i, err)
		}
		gpus = append(gpus, g)
	}
	sort.SliceStable(gpus, func(a, b int) bool { return busLess(gpus[a].PCIBusID, gpus[b].PCIBusID) })
	for i := range gpus {
		gpus[i].Index = i
	}
	return gpus, nil
}

func describe(d nvml.Device) (GPU, error) {
	g := GPU{Utilization: -1, TemperatureC: -1, PowerW: -1}
	var ret nvml.Return
	if g.UUID, ret = d.GetUUID(); ret != nvml.SUCCESS {
		return g, fmt.Errorf("uuid: %v", ret)
	}
	if g.Name, ret = d.GetName(); ret != nvml.SUCCESS {
		g.Name = "unknown GPU"
	}
	if pci, ret := d.GetPciInfo(); ret == nvml.SUCCESS {
		g.PCIBusID = busID(pci)
	}
	st := stats(d)
	g.MemoryTotal, g.MemoryUsed = st.MemoryTotal, st.MemoryUsed
	g.Utilization, g.TemperatureC, g.PowerW = st.Utilization, st.TemperatureC, st.PowerW
	g.CPUAffinity = affinity(d)
	g.NVLinkPeers = nvlinkPeers(d)
	if cur, _, ret := d.GetMigMode(); ret == nvml.SUCCESS && cur == nvml.DEVICE_MIG_ENABLE {
		g.MIGEnabled = true
		g.MIG = migs(d)
	}
	return g, nil
}

// stats reads memory, utilization, temperature and power; unsupported figures stay unknown.
func stats(d nvml.Device) Stats {
	s := Stats{Utilization: -1, TemperatureC: -1, PowerW: -1}
	if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
		s.MemoryTotal, s.MemoryUsed = m.Total, m.Used
	}
	if u, ret := d.GetUtilizationRates(); ret == nvml.SUCCESS {
		s.Utilization = int(u.Gpu)
	}
	if t, ret := d.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
		s.TemperatureC = int(t)
	}
	if p, ret := d.GetPowerUsage(); ret == nvml.SUCCESS {
		s.PowerW = float64(p) / 1000
	}
	return s
}

func affinity(d nvml.Device) []int {
	ncpu := runtime.NumCPU()
	words, ret := d.GetCpuAffinity(ncpu)
	if ret != nvml.SUCCESS {
		return nil
	}
	var cpus []int
	bits := 8 * wordSize
	for w, word := range words {
		for b := 0; b < bits; b++ {
			if word&(1<<uint(b)) != 0 {
				cpus = append(cpus, w*bits+b)
			}
		}
	}
	return cpus
}

const wordSize = 4 << (^uint(0) >> 63) // bytes in a uint

func nvlinkPeers(d nvml.Device) []string {
	var peers []string
	seen := map[string]bool{}
	for link := 0; link < nvml.NVLINK_MAX_LINKS; link++ {
		st, ret := d.GetNvLinkState(link)
		if ret != nvml.SUCCESS {
			if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
				break
			}
			continue
		}
		if st != nvml.FEATURE_ENABLED {
			continue
		}
		pci, ret := d.GetNvLinkRemotePciInfo(link)
		if ret != nvml.SUCCESS {
			continue
		}
		id := busID(pci)
		if id != "" && !seen[id] {
			seen[id] = true
			peers = append(peers, id)
		}
	}
	sort.Strings(peers)
	return peers
}

func migs(d nvml.Device) []MIG {
	n, ret := d.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil
	}
	var out []MIG
	for i := 0; i < n; i++ {
		md, ret := d.GetMigDeviceHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue // an empty slot
		}
		uuid, ret := md.GetUUID()
		if ret != nvml.SUCCESS {
			continue
		}
		m := MIG{Index: len(out), UUID: uuid}
		if mem, ret := md.GetMemoryInfo(); ret == nvml.SUCCESS {
			m.MemoryTotal, m.MemoryUsed = mem.Total, mem.Used
		}
		out = append(out, m)
	}
	return out
}

// StatsOf reads the current figures of the GPU or MIG instance with the given UUID.
func StatsOf(uuid string) (Stats, error) {
	l, err := use()
	if err != nil {
		return Stats{}, fmt.Errorf("stats of %s: %w", uuid, err)
	}
	return StatsWith(l, uuid)
}

// StatsWith reads the current figures of a device through l.
func StatsWith(l nvml.Interface, uuid string) (Stats, error) {
	d, ret := l.DeviceGetHandleByUUID(uuid)
	if ret != nvml.SUCCESS {
		return Stats{}, fmt.Errorf("stats of %s: %v", uuid, ret)
	}
	return stats(d), nil
}

// busID formats a PCI address as NVML's "DDDD:BB:DD.F" (lower-case, 4-digit domain).
func busID(p nvml.PciInfo) string {
	var b strings.Builder
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	s := strings.ToLower(b.String())
	if s == "" {
		return fmt.Sprintf("%04x:%02x:%02x.0", p.Domain, p.Bus, p.Device)
	}
	// NVML gives an 8-digit domain ("00000000:18:00.0"); CUDA and lspci use 4.
	if i := strings.IndexByte(s, ':'); i > 4 && strings.Trim(s[:i-4], "0") == "" {
		s = s[i-4:]
	}
	return s
}

// busLess orders PCI bus ids as CUDA_DEVICE_ORDER=PCI_BUS_ID does: by domain, bus, device,
// function.
func busLess(a, b string) bool {
	pa, pb := parseBus(a), parseBus(b)
	for i := range pa {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return a < b
}

func parseBus(s string) [4]uint64 {
	var v [4]uint64
	var dom, bus, dev, fn uint64
	if _, err := fmt.Sscanf(s, "%x:%x:%x.%x", &dom, &bus, &dev, &fn); err == nil {
		v = [4]uint64{dom, bus, dev, fn}
	}
	return v
}
