package cluster

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster/gpuinfo"
)

func fakeGPUs() []gpuinfo.GPU {
	return []gpuinfo.GPU{
		{Index: 0, Name: "H100", UUID: "GPU-aaaa1111", MemoryTotal: 80 << 30},
		{Index: 1, Name: "H100", UUID: "GPU-bbbb2222", MemoryTotal: 80 << 30},
		{Index: 2, Name: "A100", UUID: "GPU-cccc3333", MemoryTotal: 40 << 30, MIGEnabled: true, MIG: []gpuinfo.MIG{
			{Index: 0, UUID: "MIG-m0", MemoryTotal: 20 << 30}, {Index: 1, UUID: "MIG-m1", MemoryTotal: 10 << 30}}},
	}
}

func uuids(s []slot) string {
	var out []string
	for _, x := range s {
		out = append(out, x.uuid)
	}
	return strings.Join(out, ",")
}

func TestSelectSlots(t *testing.T) {
	g := fakeGPUs()
	cases := []struct {
		devices []string
		env     string
		envSet  bool
		want    string
		err     string
	}{
		{nil, "", false, "GPU-aaaa1111,GPU-bbbb2222,MIG-m0,MIG-m1", ""},
		{nil, "1,0", true, "GPU-bbbb2222,GPU-aaaa1111", ""},
		{nil, "", true, "", ""},
		{nil, "1,7,0", true, "GPU-bbbb2222", ""}, // CUDA stops at the first invalid entry
		{nil, "MIG-m1", true, "MIG-m1", ""},
		{nil, "bbbb", true, "GPU-bbbb2222", ""}, // a unique UUID prefix
		{[]string{"1"}, "2,1", true, "GPU-bbbb2222", ""},
		{[]string{"0"}, "2,1", true, "MIG-m0,MIG-m1", ""},
		{[]string{"GPU-aaaa1111", "MIG-m1"}, "", false, "GPU-aaaa1111,MIG-m1", ""},
		{[]string{"GPU-aaaa1111"}, "1", true, "", "hidden by CUDA_VISIBLE_DEVICES"},
		{[]string{"5"}, "", false, "", "matches none"},
		{[]string{"0", "0"}, "", false, "", "selected twice"},
	}
	for _, tc := range cases {
		got, err := selectSlots(g, tc.devices, tc.env, tc.envSet)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v env %q: error %v, want %q", tc.devices, tc.env, err, tc.err)
			}
			continue
		}
		if err != nil || uuids(got) != tc.want {
			t.Errorf("%v env %q (set %v): %q %v, want %q", tc.devices, tc.env, tc.envSet, uuids(got), err, tc.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		err  bool
	}{
		{"", 7, false}, {"80%", 800, false}, {"0.5", 500, false}, {"4GiB", 4 << 30, false},
		{"512MB", 512e6, false}, {"123", 123, false}, {"0", 0, false}, {"1e3", 1000, false},
		{"150%", 0, true}, {"lots", 0, true}, {"-1", 0, true},
	}
	for _, tc := range cases {
		got, err := parseSize(tc.in, 1000, 7)
		if tc.err != (err != nil) || !tc.err && got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestPlanWorkersVirtualGPUsAndMIG(t *testing.T) {
	g := fakeGPUs()
	specs, err := planWorkers(Options{WorkersPerGPU: 2}, g, nil, "", false, 64<<30)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 8 {
		t.Fatalf("%d workers, want 8 (4 slots × 2)", len(specs))
	}
	if specs[0].name != "gpu0-v0" || specs[1].name != "gpu0-v1" || specs[4].name != "gpu2-mig0-v0" {
		t.Fatalf("names %s %s %s", specs[0].name, specs[1].name, specs[4].name)
	}
	// 80% of 80 GiB split between 2 workers; MIG slices get their own memory.
	if specs[0].deviceMemoryLimit != (80<<30)*8/10/2 || specs[6].deviceMemoryLimit != (10<<30)*8/10/2 {
		t.Fatalf("device limits %d %d", specs[0].deviceMemoryLimit, specs[6].deviceMemoryLimit)
	}
	if specs[0].memoryLimit != (64<<30)/8 || specs[0].threads != 1 {
		t.Fatalf("host limit %d threads %d", specs[0].memoryLimit, specs[0].threads)
	}
	specs, err = planWorkers(Options{DeviceMemoryLimit: "50%", NWorkers: 1}, g, nil, "1", true, 64<<30)
	if err != nil || len(specs) != 1 || specs[0].slot.uuid != "GPU-bbbb2222" || specs[0].deviceMemoryLimit != 40<<30 {
		t.Fatalf("NWorkers 1 under CUDA_VISIBLE_DEVICES=1: %+v %v", specs, err)
	}
	if _, err := planWorkers(Options{NWorkers: 5}, g, nil, "", false, 1); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("too many workers: %v", err)
	}
	specs, err = planWorkers(Options{NWorkers: 3, ThreadsPerWorker: 2}, nil, gpuinfo.ErrNoNVML, "", false, 6<<30)
	if err != nil || len(specs) != 3 || specs[2].name != "cpu2" || specs[2].slot != nil || specs[2].threads != 2 || specs[2].memoryLimit != 2<<30 {
		t.Fatalf("CPU plan %+v %v", specs, err)
	}
}
