package cluster

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// imageMappings sums the resident and the anonymous (written) kB of the executable's
// read-only mappings, from /proc/self/smaps.
func imageMappings(t *testing.T) (rss, anon int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps")
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			in = len(f) >= 6 && f[5] == exe && len(f[1]) == 4 && f[1][0] == 'r' && f[1][1] == '-'
			continue
		}
		if !in || len(f) < 2 {
			continue
		}
		kb, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "Rss:":
			rss += kb
		case "Anonymous:":
			anon += kb
		}
	}
	return rss, anon
}

// TestDropImagePagesKeepsWrittenPages drops this test binary's read-only pages from its
// resident memory: fewer are resident after, but the pages the dynamic loader wrote and
// then protected (anonymous, such as the relocated GOT of a cgo binary) stay, and the
// process goes on running code and data from the pages dropped (they come back from the
// file).
func TestDropImagePagesKeepsWrittenPages(t *testing.T) {
	rss0, anon0 := imageMappings(t)
	dropped := dropImagePages()
	rss1, anon1 := imageMappings(t)
	t.Logf("read-only image pages: %d kB resident, %d kB anonymous before; %d kB advised away; %d kB resident, %d kB anonymous after", rss0, anon0, dropped>>10, rss1, anon1)
	if dropped == 0 || rss1 >= rss0 {
		t.Fatalf("%d bytes dropped, resident %d kB before and %d kB after", dropped, rss0, rss1)
	}
	if anon1 != anon0 {
		t.Fatalf("anonymous read-only pages went from %d kB to %d kB: written pages were dropped", anon0, anon1)
	}
	runtime.GC()
	if s := fmt.Sprint(os.Getpid(), strings.Repeat("x", 3)); s == "" {
		t.Fatal("formatting after the drop")
	}
	if h, err := os.Hostname(); err != nil || h == "" {
		t.Fatalf("hostname after the drop: %q, %v", h, err)
	}
}
