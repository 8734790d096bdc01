package cluster

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/gpunotes/gpunotes/cluster/gpuinfo"
)

// slot is one place a worker can be pinned to: a whole GPU or a MIG instance.
type slot struct {
	gpu      gpuinfo.GPU
	mig      *gpuinfo.MIG // nil for a whole GPU
	uuid     string       // what the worker's CUDA_VISIBLE_DEVICES is set to
	memTotal uint64
}

// label names a slot for tables: "GPU 0" or "GPU 1 MIG 2".
func (s slot) label() string {
	if s.mig != nil {
		return fmt.Sprintf("GPU %d MIG %d", s.gpu.Index, s.mig.Index)
	}
	return fmt.Sprintf("GPU %d", s.gpu.Index)
}

// visibleGPUs applies CUDA_VISIBLE_DEVICES (when set) to gpus, with CUDA's rules: entries are
// indices in PCI order, GPU UUIDs or unique UUID prefixes, or MIG UUIDs; the list ends at the
// first entry that matches nothing; an empty value hides every GPU. Each result is a GPU, or a
// GPU holding just the one MIG instance the entry named.
func visibleGPUs(gpus []gpuinfo.GPU, env string, set bool) []gpuinfo.GPU {
	if !set {
		return gpus
	}
	var out []gpuinfo.GPU
	seen := map[string]bool{}
	for _, e := range strings.Split(env, ",") {
		e = strings.TrimSpace(e)
		g, ok := matchDevice(gpus, e)
		if !ok {
			break
		}
		key := g.UUID
		if len(g.MIG) == 1 && g.MIGEnabled {
			key += "/" + g.MIG[0].UUID
		}
		if seen[key] {
			break // CUDA treats a repeated device as invalid and stops there
		}
		seen[key] = true
		out = append(out, g)
	}
	return out
}

// matchDevice finds the GPU (or MIG instance, returned as its GPU holding only that instance)
// that one device entry names: an index, a UUID, a unique UUID prefix, or a MIG UUID.
func matchDevice(gpus []gpuinfo.GPU, e string) (gpuinfo.GPU, bool) {
	if e == "" {
		return gpuinfo.GPU{}, false
	}
	if n, err := strconv.Atoi(e); err == nil {
		if n < 0 || n >= len(gpus) {
			return gpuinfo.GPU{}, false
		}
		return gpus[n], true
	}
	if strings.HasPrefix(e, "MIG-") {
		for _, g := range gpus {
			for _, m := range g.MIG {
				if m.UUID == e {
					one := g
					one.MIG = []gpuinfo.MIG{m}
					return one, true
				}
			}
		}
		return gpuinfo.GPU{}, false
	}
	p := e
	if !strings.HasPrefix(p, "GPU-") {
		p = "GPU-" + p
	}
	var found []gpuinfo.GPU
	for _, g := range gpus {
		if strings.HasPrefix(g.UUID, p) {
			found = append(found, g)
		}
	}
	if len(found) != 1 {
		return gpuinfo.GPU{}, false
	}
	return found[0], true
}

// selectSlots picks the slots that workers are pinned to. devices are Options.Devices: indices
// count within the visible GPUs (as CUDA ordinals in this process do), UUIDs and MIG UUIDs
// name devices directly. An empty list selects every visible GPU. A MIG-enabled GPU gives one
// slot per MIG instance.
func selectSlots(all []gpuinfo.GPU, devices []string, env string, envSet bool) ([]slot, error) {
	visible := visibleGPUs(all, env, envSet)
	chosen := visible
	if len(devices) > 0 {
		chosen = nil
		for _, d := range devices {
			d = strings.TrimSpace(d)
			g, ok := matchDevice(visible, d)
			if !ok {
				if _, okAll := matchDevice(all, d); okAll && !isIndex(d) {
					return nil, fmt.Errorf("device %q is hidden by CUDA_VISIBLE_DEVICES=%q", d, env)
				}
				return nil, fmt.Errorf("device %q matches none of the %d visible GPUs (give an index 0..%d, a GPU-… UUID or a MIG-… UUID)", d, len(visible), len(visible)-1)
			}
			chosen = append(chosen, g)
		}
	}
	var slots []slot
	seen := map[string]bool{}
	for _, g := range chosen {
		if g.MIGEnabled {
			if len(g.MIG) == 0 {
				if len(devices) > 0 {
					return nil, fmt.Errorf("GPU %d (%s) has MIG enabled but no MIG instances", g.Index, g.UUID)
				}
				continue
			}
			for i := range g.MIG {
				m := g.MIG[i]
				if seen[m.UUID] {
					return nil, fmt.Errorf("device %s selected twice", m.UUID)
				}
				seen[m.UUID] = true
				slots = append(slots, slot{gpu: g, mig: &m, uuid: m.UUID, memTotal: m.MemoryTotal})
			}
			continue
		}
		if seen[g.UUID] {
			return nil, fmt.Errorf("device %s selected twice", g.UUID)
		}
		seen[g.UUID] = true
		slots = append(slots, slot{gpu: g, uuid: g.UUID, memTotal: g.MemoryTotal})
	}
	return slots, nil
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// parseSize reads a memory amount: "" gives def; "80%" or "0.8" are fractions of total;
// "4GiB", "512MB", "1e9" or "123456" are bytes. "0" means no limit.
func parseSize(s string, total, def uint64) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "auto") {
		return def, nil
	}
	if strings.HasSuffix(s, "%") {
		f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
		if err != nil || f < 0 || f > 100 {
			return 0, fmt.Errorf("memory limit %q: a percentage must be between 0%% and 100%%", s)
		}
		return uint64(f / 100 * float64(total)), nil
	}
	units := []struct {
		suffix string
		mult   float64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"b", 1},
	}
	lower := strings.ToLower(s)
	mult := 1.0
	num := lower
	for _, u := range units {
		if strings.HasSuffix(lower, u.suffix) {
			mult, num = u.mult, strings.TrimSpace(strings.TrimSuffix(lower, u.suffix))
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("memory limit %q: want bytes (\"4GiB\", \"512MB\"), a percentage (\"80%%\") or a fraction (\"0.8\")", s)
	}
	if mult == 1 && f > 0 && f <= 1 && strings.Contains(num, ".") {
		return uint64(f * float64(total)), nil // a fraction of the total
	}
	return uint64(f * mult), nil
}

// hostMemory returns the machine's total memory in bytes (0 when unknown).
func hostMemory() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseUint(fields[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// mpsRunning reports whether an MPS control daemon is reachable (its pipe directory holds a
// control socket), so GPU-sharing workers run their kernels concurrently under MPS.
func mpsRunning() bool {
	dir := os.Getenv("CUDA_MPS_PIPE_DIRECTORY")
	if dir == "" {
		dir = "/tmp/nvidia-mps"
	}
	st, err := os.Stat(dir + "/control")
	return err == nil && st.Mode()&os.ModeSocket != 0
}

// formatBytes renders a byte count for tables ("1.50 GiB").
func formatBytes(b uint64) string {
	switch {
	case b >= 1<<40:
		return fmt.Sprintf("%.2f TiB", float64(b)/(1<<40))
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.2f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
