package gpuinfo_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/gpunotes/gpunotes/cluster/gpuinfo"
)

func pci(s string) nvml.PciInfo {
	var p nvml.PciInfo
	for i := 0; i < len(s); i++ {
		p.BusId[i] = int8(s[i])
	}
	return p
}

// fakeServer is a DGX A100 mock whose devices report figures the stock mock leaves out. NVML
// numbers device i at bus 0x(80-i), so PCI order is the reverse of NVML's index order.
func fakeServer() *dgxa100.Server {
	s := dgxa100.New()
	for i, dev := range s.Devices {
		d := dev.(*dgxa100.Device)
		i := i
		d.MemoryInfo = nvml.Memory{Total: 40 << 30, Used: uint64(i) << 30}
		d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			return pci(fmt.Sprintf("00000000:%02X:00.0", 0x80-i)), nvml.SUCCESS
		}
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: uint32(10 * i)}, nvml.SUCCESS
		}
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 40, nvml.SUCCESS }
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 123500, nvml.SUCCESS }
		d.GetCpuAffinityFunc = func(n int) ([]uint, nvml.Return) {
			if i < 4 {
				return []uint{0b1111}, nvml.SUCCESS
			}
			return []uint{0b11110000}, nvml.SUCCESS
		}
		d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
			if link >= 2 {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		d.GetNvLinkRemotePciInfoFunc = func(link int) (nvml.PciInfo, nvml.Return) {
			peer := (i + 1 + link) % 8
			return pci(fmt.Sprintf("00000000:%02X:00.0", 0x80-peer)), nvml.SUCCESS
		}
		d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
		d.GetMigDeviceHandleByIndexFunc = func(k int) (nvml.Device, nvml.Return) {
			if k >= 2 {
				return nil, nvml.ERROR_NOT_FOUND
			}
			return &mock.Device{
				GetUUIDFunc: func() (string, nvml.Return) { return fmt.Sprintf("MIG-%d-%d", i, k), nvml.SUCCESS },
				GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
					return nvml.Memory{Total: 10 << 30, Used: 1 << 20}, nvml.SUCCESS
				},
			}, nvml.SUCCESS
		}
	}
	// Device 3 has MIG on.
	s.Devices[3].(*dgxa100.Device).MigMode = nvml.DEVICE_MIG_ENABLE
	return s
}

func TestDiscoverPCIOrderAndFigures(t *testing.T) {
	s := fakeServer()
	gpus, err := gpuinfo.DiscoverWith(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 8 {
		t.Fatalf("got %d GPUs, want 8", len(gpus))
	}
	for i, g := range gpus {
		if g.Index != i {
			t.Errorf("gpu %d has Index %d", i, g.Index)
		}
		want := fmt.Sprintf("0000:%02x:00.0", 0x80-7+i)
		if g.PCIBusID != want {
			t.Errorf("gpu %d bus id %q, want %q (PCI order)", i, g.PCIBusID, want)
		}
	}
	// PCI order is NVML's order reversed: position 0 is NVML device 7.
	nv7 := s.Devices[7].(*dgxa100.Device)
	g := gpus[0]
	if g.UUID != nv7.UUID || g.Name != nv7.Name {
		t.Errorf("first GPU %s %q, want NVML device 7 %s", g.UUID, g.Name, nv7.UUID)
	}
	if g.MemoryTotal != 40<<30 || g.MemoryUsed != 7<<30 || g.Utilization != 70 || g.TemperatureC != 40 || g.PowerW != 123.5 {
		t.Errorf("figures: %+v", g)
	}
	if fmt.Sprint(g.CPUAffinity) != "[4 5 6 7]" || fmt.Sprint(gpus[7].CPUAffinity) != "[0 1 2 3]" {
		t.Errorf("affinity %v / %v", g.CPUAffinity, gpus[7].CPUAffinity)
	}
	// NVML device 7 links to devices 0 and 1: buses 0x80 and 0x7f.
	if fmt.Sprint(g.NVLinkPeers) != "[0000:7f:00.0 0000:80:00.0]" {
		t.Errorf("nvlink peers %v", g.NVLinkPeers)
	}
	var mig *gpuinfo.GPU
	for i := range gpus {
		if gpus[i].MIGEnabled {
			if mig != nil {
				t.Fatal("two MIG GPUs, want one")
			}
			mig = &gpus[i]
		}
	}
	if mig == nil || len(mig.MIG) != 2 || mig.MIG[1].UUID != "MIG-3-1" || mig.MIG[0].MemoryTotal != 10<<30 {
		t.Fatalf("MIG instances: %+v", mig)
	}
	st, err := gpuinfo.StatsWith(s, nv7.UUID)
	if err != nil || st.Utilization != 70 {
		t.Fatalf("StatsWith: %+v %v", st, err)
	}
}

func TestDiscoverWithoutDriver(t *testing.T) {
	gpus, err := gpuinfo.Discover()
	if err != nil && !errors.Is(err, gpuinfo.ErrNoNVML) {
		t.Fatalf("Discover failed other than ErrNoNVML: %v", err)
	}
	if err != nil && len(gpus) != 0 {
		t.Fatalf("GPUs %v with error %v", gpus, err)
	}
	t.Logf("this machine: %d GPUs, err %v", len(gpus), err)
}
