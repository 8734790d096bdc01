package interp

import (
	"path"
	"regexp"
	"sort"
	"strings"
)

// yaegi's two messages for a package member that does not exist:
// "undefined selector gpunotes.test/hook.Fft" and `package hook "gpunotes.test/hook" has no
// symbol Fft`.
var (
	undefSelRE = regexp.MustCompile(`^undefined selector ([^ ]+)\.(\w+)$`)
	noSymbolRE = regexp.MustCompile(`^package \w+ "([^"]+)" has no symbol (\w+)$`)
)

// undefinedMember rewrites yaegi's message for a missing member of a compiled package as
// `go build` says it, "undefined: gpuarray.Fft", and returns the hint: the new name when the
// member was renamed (Options.Renamed), else the package's nearest exported name. src is the
// segment, which tells the package's local name where several import it.
func (s *Session) undefinedMember(msg, src string) (newMsg, hint string, ok bool) {
	m := undefSelRE.FindStringSubmatch(msg)
	if m == nil {
		m = noSymbolRE.FindStringSubmatch(msg)
	}
	if m == nil {
		return "", "", false
	}
	pkgPath, name := m[1], m[2]
	var syms []string
	pkgName := path.Base(pkgPath)
	for key, table := range s.symbols {
		if path.Dir(key) != pkgPath {
			continue
		}
		pkgName = path.Base(key)
		for n := range table {
			if n != "" && n[0] != '_' && strings.ToUpper(n[:1]) == n[:1] {
				syms = append(syms, n)
			}
		}
	}
	local := pkgName
	s.declMu.RLock()
	for n, p := range s.imported {
		if p == pkgPath && regexp.MustCompile(`\b`+regexp.QuoteMeta(n)+`\s*\.\s*`+name+`\b`).MatchString(src) {
			local = n
		}
	}
	s.declMu.RUnlock()
	newMsg = "undefined: " + local + "." + name
	if to, ok := s.opts.Renamed[pkgName+"."+name]; ok {
		_, toName, _ := strings.Cut(to, ".")
		return newMsg, "did you mean " + local + "." + toName + "? " + name + " is its old name", true
	}
	if h, ok := genericMissing[pkgPath+"."+name]; ok {
		return newMsg, "the Go interpreter (yaegi) cannot run this generic function of the standard library: " + h, true
	}
	sort.Strings(syms)
	if near := nearest(name, syms); near != "" {
		hint = "did you mean " + local + "." + near + "?"
	}
	return newMsg, hint, true
}

// genericMissing says what to write instead of the generic standard library names that cells
// cannot use: extraction skips them, and yaegi cannot run the interpreted versions tried
// (iter.Pull's goroutine crashed the process; an interpreted weak.Pointer[T] returned T, not
// *T, from Value and crashed as a struct field). A %%compile cell has them all.
var genericMissing = map[string]string{
	"iter.Pull":    "collect the values first (slices.Collect(seq)), or call the sequence with a yield func; a %%compile cell has it",
	"iter.Pull2":   "collect the pairs first (maps.Collect(seq)), or call the sequence with a yield func; a %%compile cell has it",
	"weak.Make":    "keep an ordinary pointer; a %%compile cell has the package",
	"weak.Pointer": "keep an ordinary pointer; a %%compile cell has the package",
}
