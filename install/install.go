package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// DefaultName is the kernelspec directory name.
const DefaultName = "gpunotes"

// DisplayName is what Jupyter's kernel picker shows.
const DisplayName = "Go (gpunotes)"

// Scope says which Jupyter data directory receives the kernelspec.
type Scope int

const (
	// User is the per-user data dir (JUPYTER_DATA_DIR if set).
	User Scope = iota
	// SysPrefix is the data dir of the active Python environment.
	SysPrefix
	// Prefix is PREFIX/share/jupyter.
	Prefix
)

// Options says where and under which name to install.
type Options struct {
	Scope  Scope
	Prefix string // for Scope Prefix
	Name   string // default DefaultName
	Binary string // absolute path of the gpunotes binary (default: this executable)
	Env    map[string]string
}

// KernelsDir returns the "kernels" directory for opts under Jupyter's path rules.
func KernelsDir(opts Options) (string, error) {
	switch opts.Scope {
	case Prefix:
		if opts.Prefix == "" {
			return "", errors.New("--prefix needs a directory")
		}
		abs, err := filepath.Abs(opts.Prefix)
		if err != nil {
			return "", err
		}
		return filepath.Join(abs, "share", "jupyter", "kernels"), nil
	case SysPrefix:
		p, err := sysPrefix()
		if err != nil {
			return "", err
		}
		return filepath.Join(p, "share", "jupyter", "kernels"), nil
	}
	if d := os.Getenv("JUPYTER_DATA_DIR"); d != "" {
		return filepath.Join(d, "kernels"), nil
	}
	if runtime.GOOS == "darwin" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, "Library", "Jupyter", "kernels"), nil
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "jupyter", "kernels"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find home directory: %w", err)
	}
	return filepath.Join(home, ".local", "share", "jupyter", "kernels"), nil
}

// sysPrefix is the active Python environment: $VIRTUAL_ENV or $CONDA_PREFIX, else python3's
// sys.prefix.
func sysPrefix() (string, error) {
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := os.Getenv(v); p != "" {
			return p, nil
		}
	}
	out, err := exec.Command("python3", "-c", "import sys; print(sys.prefix)").Output()
	if err != nil {
		return "", fmt.Errorf("--sys-prefix: no VIRTUAL_ENV and python3 failed: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Spec is kernel.json.
type Spec struct {
	Argv          []string          `json:"argv"`
	DisplayName   string            `json:"display_name"`
	Language      string            `json:"language"`
	InterruptMode string            `json:"interrupt_mode"`
	Env           map[string]string `json:"env,omitempty"`
	Metadata      map[string]any    `json:"metadata"`
}

// Install writes the kernelspec and returns its directory.
func Install(opts Options) (string, error) {
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if err := ValidName(opts.Name); err != nil {
		return "", err
	}
	bin := opts.Binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("locate the gpunotes binary: %w", err)
		}
		bin = exe
	}
	bin, err := filepath.Abs(bin)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(bin); err == nil {
		bin = r
	}
	kdir, err := KernelsDir(opts)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(kdir, opts.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	name := DisplayName
	if opts.Name != DefaultName {
		name = fmt.Sprintf("%s [%s]", DisplayName, opts.Name)
	}
	spec := Spec{Argv: []string{bin, "kernel", "{connection_file}"}, DisplayName: name, Language: "go",
		InterruptMode: "message", Env: opts.Env, Metadata: map[string]any{"debugger": false, installedBy: true}}
	b, _ := json.MarshalIndent(spec, "", "  ")
	files := map[string][]byte{"kernel.json": append(b, '\n'), "logo-svg.svg": []byte(logoSVG),
		"logo-32x32.png": logoPNG(32), "logo-64x64.png": logoPNG(64)}
	for n, data := range files {
		if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", n, err)
		}
	}
	return dir, nil
}

// installedBy marks, in kernel.json's metadata, a kernelspec that Install wrote.
const installedBy = "gpunotes_installed"

// specFiles are the files Install writes; Uninstall removes only these.
var specFiles = []string{"kernel.json", "logo-svg.svg", "logo-32x32.png", "logo-64x64.png"}

// ValidName checks a kernelspec name as jupyter_client does (letters, digits, '-', '.', '_'),
// and refuses "." and "..", which jupyter_client's pattern lets through as directory names.
func ValidName(name string) error {
	ok := name != "" && name != "." && name != ".."
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("kernel name %q: use letters, digits, '-', '_' or '.' (as Jupyter does)", name)
	}
	return nil
}

// ours reports whether dir holds a kernelspec that this program installed: kernel.json with
// Install's mark, or (from releases before the mark) gpunotes' display name and argv.
func ours(dir string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if err != nil {
		return false, err
	}
	var spec Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return false, fmt.Errorf("%s/kernel.json: %w", dir, err)
	}
	if mark, _ := spec.Metadata[installedBy].(bool); mark {
		return true, nil
	}
	return strings.HasPrefix(spec.DisplayName, DisplayName) && len(spec.Argv) == 3 && spec.Argv[1] == "kernel", nil
}

// Uninstall removes the kernelspec named name from every scope where it is found. It removes
// only the files Install writes, and the directory if nothing else is left in it, and refuses
// a kernelspec that this program did not install.
func Uninstall(name string) ([]string, error) {
	if name == "" {
		name = DefaultName
	}
	if err := ValidName(name); err != nil {
		return nil, err
	}
	var removed []string
	for _, sc := range []Options{{Scope: User}, {Scope: SysPrefix}} {
		kdir, err := KernelsDir(sc)
		if err != nil {
			continue
		}
		dir := filepath.Join(kdir, name)
		if _, err := os.Stat(filepath.Join(dir, "kernel.json")); err != nil {
			continue
		}
		mine, err := ours(dir)
		if err != nil {
			return removed, err
		}
		if !mine {
			return removed, fmt.Errorf("%s is not a gpunotes kernelspec; not removing it", dir)
		}
		for _, f := range specFiles {
			if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return removed, fmt.Errorf("remove %s: %w", f, err)
			}
		}
		if err := os.Remove(dir); err != nil {
			return removed, fmt.Errorf("removed the kernelspec files but kept %s, which holds other files: %w", dir, err)
		}
		removed = append(removed, dir)
	}
	if len(removed) == 0 {
		return nil, fmt.Errorf("no kernelspec named %q found (user or sys-prefix data dirs)", name)
	}
	return removed, nil
}

const logoSVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64">
<rect x="4" y="4" width="56" height="56" rx="10" fill="#00add8"/>
<rect x="14" y="14" width="36" height="36" rx="3" fill="#76b900"/>
<g fill="#ffffff"><rect x="20" y="20" width="10" height="10"/><rect x="34" y="20" width="10" height="10"/>
<rect x="20" y="34" width="10" height="10"/><rect x="34" y="34" width="10" height="10"/></g>
</svg>
`

// logoPNG draws the same logo as logoSVG at size px: a Go-blue tile with a green chip of four
// chunks, the shape of a chunked array on a GPU.
func logoPNG(size int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	blue := color.NRGBA{0x00, 0xad, 0xd8, 0xff}
	green := color.NRGBA{0x76, 0xb9, 0x00, 0xff}
	white := color.NRGBA{0xff, 0xff, 0xff, 0xff}
	s := float64(size) / 64
	in := func(x, y int, x0, y0, w, h float64) bool {
		fx, fy := (float64(x)+0.5)/s, (float64(y)+0.5)/s
		return fx >= x0 && fx < x0+w && fy >= y0 && fy < y0+h
	}
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			var c color.NRGBA
			switch {
			case in(x, y, 20, 20, 10, 10) || in(x, y, 34, 20, 10, 10) || in(x, y, 20, 34, 10, 10) || in(x, y, 34, 34, 10, 10):
				c = white
			case in(x, y, 14, 14, 36, 36):
				c = green
			case in(x, y, 4, 4, 56, 56):
				c = blue
			}
			img.SetNRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}
