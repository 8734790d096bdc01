package notebooks_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/internal/testenv"
	"github.com/gpunotes/gpunotes/nbrun"
	"github.com/gpunotes/gpunotes/notebooks"
)

func TestBuildPercentFormat(t *testing.T) {
	src := "// %% [markdown]\n// # Title\n//\n// text\n\n// %% tags=[\"parameters\"]\nN := 1\n\n// %%\nfmt.Println(N)\n"
	nb, err := notebooks.Build("07-x", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(nb.Cells) != 3 {
		t.Fatalf("%d cells, want 3", len(nb.Cells))
	}
	c := nb.Cells
	if c[0].Type != "markdown" || c[0].Source != "# Title\n\ntext" {
		t.Errorf("markdown cell = %q %q", c[0].Type, c[0].Source)
	}
	if c[1].Type != "code" || !c[1].HasTag("parameters") || c[1].Source != "N := 1" {
		t.Errorf("parameters cell = %+v", c[1])
	}
	if c[2].Source != "fmt.Println(N)" || c[2].ID != "nb07-03" {
		t.Errorf("code cell = %q id %q", c[2].Source, c[2].ID)
	}
	if nb.Language() != "go" {
		t.Errorf("language %q", nb.Language())
	}
	for _, bad := range []string{"x := 1\n// %%\n", "// %% [markdown]\nnot a comment\n", "// %% what\n"} {
		if _, err := notebooks.Build("bad", []byte(bad)); err == nil {
			t.Errorf("Build accepted %q", bad)
		}
	}
}

// TestNotebooksCurrent fails when a notebook differs from what its source generates.
func TestNotebooksCurrent(t *testing.T) {
	srcs, err := notebooks.Sources(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) == 0 {
		t.Fatal("no notebook sources in src/")
	}
	for name, src := range srcs {
		nb, err := notebooks.Build(name, src)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := nb.Marshal()
		got, err := os.ReadFile(name + ".ipynb")
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s.ipynb is stale or missing (%v): run go generate ./notebooks", name, err)
		}
	}
}

// cellOutput is what one executed cell showed, by kind.
type cellOutput struct {
	source string
	text   string // stream text, text/plain of results and displays, error tracebacks
	html   string
	svg    string
	errors []string
}

func outputsOf(t *testing.T, path string) []cellOutput {
	t.Helper()
	nb, err := nbrun.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []cellOutput
	for _, c := range nb.Cells {
		if c.Type != "code" {
			continue
		}
		co := cellOutput{source: c.Source}
		for _, o := range c.Outputs {
			switch o.Type {
			case "stream":
				co.text += o.Text
			case "error":
				co.errors = append(co.errors, o.EName+": "+o.EValue)
				co.text += strings.Join(o.Traceback, "\n")
			default:
				if s, ok := o.Data["text/plain"].(string); ok {
					co.text += s + "\n"
				}
				if s, ok := o.Data["text/html"].(string); ok {
					co.html += s
				}
				if s, ok := o.Data["image/svg+xml"].(string); ok {
					co.svg += s
				}
			}
		}
		out = append(out, co)
	}
	return out
}

func joined(cells []cellOutput, f func(cellOutput) string) string {
	var sb strings.Builder
	for _, c := range cells {
		sb.WriteString(f(c))
	}
	return sb.String()
}

// gpuPresent reports whether this machine has an NVIDIA driver (then GPU rows must run).
func gpuPresent() bool {
	for _, p := range []string{"/proc/driver/nvidia/version", "/dev/nvidiactl"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

var zRE = regexp.MustCompile(`z ([+-][0-9.]+)`)

// machineRE finds notebook 01's line naming the machine's GPUs ("none" without one).
var machineRE = regexp.MustCompile(`machine: \d+ CPU cores; GPUs: ([^\n]+)`)

// checks assert each notebook's key outputs.
var checks = map[string]func(t *testing.T, cells []cellOutput){
	"01-cpu-vs-gpu": func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		html := joined(cells, func(c cellOutput) string { return c.html })
		svg := joined(cells, func(c cellOutput) string { return c.svg })
		for _, row := range []string{"One CPU core", "CPU cores", "One GPU", "All GPUs"} {
			if !strings.Contains(html, row) {
				t.Errorf("results table lacks the row %q", row)
			}
		}
		if !strings.Contains(html, `class="gpunotes-results"`) || !strings.Contains(html, "2 h 39 min") {
			t.Errorf("results table missing or without the 2019 figures:\n%s", html)
		}
		if m := machineRE.FindStringSubmatch(text); m == nil {
			t.Errorf("no machine line:\n%s", text)
		} else if gpuPresent() == (m[1] == "none") {
			t.Errorf("machine line names GPUs %q, GPU present %v", m[1], gpuPresent())
		}
		zs := zRE.FindAllStringSubmatch(text, -1)
		want := 2
		if gpuPresent() {
			want = 4
		}
		if len(zs) != want {
			t.Errorf("%d rows ran (want %d):\n%s", len(zs), want, text)
		}
		for _, m := range zs {
			z, _ := strconv.ParseFloat(m[1], 64)
			if math.Abs(z) > 6 {
				t.Errorf("z = %v: the sum is not what N(11, 1) elements give", z)
			}
		}
		if !gpuPresent() && strings.Count(text, "skipped: no GPU (") < 2 {
			t.Errorf("GPU rows do not say they were skipped:\n%s", text)
		}
		if !strings.Contains(svg, "<svg") || !strings.Contains(svg, "<rect") || !strings.Contains(svg, "log scale") {
			t.Errorf("no log-scale bar chart")
		}
		// Every row has its 2019 bar; a skipped row is marked instead of today's bar.
		if n := strings.Count(svg, "<title>2019: "); n != 4 {
			t.Errorf("chart has %d bars of 2019 figures, want 4", n)
		}
		if skipped := 4 - len(zs); strings.Count(svg, "today: no value") != skipped {
			t.Errorf("chart does not mark the %d skipped rows:\n%s", skipped, svg)
		}
	},
}

// contains fails the test for each want missing from got.
func contains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

var taskARE = regexp.MustCompile(`task A: mean ([0-9.]+)`)

var sameMeanRE = regexp.MustCompile(`(?:a mean under the same limit: |no progress bar: mean )([0-9.]+) \(<nil>\)`)

var meanRE = regexp.MustCompile(`(task [ABC])[^\n]*: mean ([0-9.]+)`)

func init() {
	checks["02-local-cuda-cluster"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		html := joined(cells, func(c cellOutput) string { return c.html })
		contains(t, "output", text, "workers started in", ": 1 + 2 = 3 in pid", "squares: [1 4 9 16 25 36 49 64]",
			"CUDA_VISIBLE_DEVICES=0: worker", "cluster closed, err = <nil>",
			"scheduler listening on tcp://127.0.0.1:", "multi-node: 1 + 10 = 11", "multi-node: 2 + 20 = 22",
			"scheduler and cuda-worker stopped")
		contains(t, "cluster HTML", html, "<table", "Last seen")
		if !gpuPresent() {
			contains(t, "output", text, `Options{Devices: []string{"0"}}: skipped:`, "CUDA_VISIBLE_DEVICES=(none: a CPU worker)")
		}
	}
	checks["03-gpu-per-task"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		html := joined(cells, func(c cellOutput) string { return c.html })
		contains(t, "output", text, "-> job 0 ran in pid", "no such worker", "cluster closed, err = <nil>")
		contains(t, "cluster HTML", html, "<table")
		ms := meanRE.FindAllStringSubmatch(text, -1)
		if len(ms) != 3 {
			t.Errorf("want the means of tasks A, B and C:\n%s", text)
		}
		for _, m := range ms {
			v, _ := strconv.ParseFloat(m[2], 64)
			if math.Abs(v-11) > 0.01 {
				t.Errorf("%s: mean %v, want about 11", m[1], v)
			}
		}
		if !gpuPresent() {
			contains(t, "output", text, "GPU 0 skipped:", "GPU 1 skipped:", "on the CPU (fallback)")
		}
		// Session defaults: task A (seed 1) gives the same mean under a memory limit and quietly.
		contains(t, "output", text, "exceeds the memory limit of 1048576 bytes",
			"cancelled before it started: context.Canceled: true")
		if gpuPresent() {
			contains(t, "output", text, "SetBackend(GPU): task A's mean ")
		} else {
			contains(t, "output", text, "SetBackend(GPU) refused: ")
		}
		if a := taskARE.FindStringSubmatch(text); a == nil {
			t.Errorf("no mean of task A:\n%s", text)
		} else {
			for _, m := range sameMeanRE.FindAllStringSubmatch(text, -1) {
				if m[1] != a[1] {
					t.Errorf("task A's mean is %s, but %s under the session defaults", a[1], m[1])
				}
			}
			if n := len(sameMeanRE.FindAllStringSubmatch(text, -1)); n != 2 {
				t.Errorf("%d means under the session defaults, want 2:\n%s", n, text)
			}
		}
	}
}

// runRE matches one measured configuration of notebook 04.
var runRE = regexp.MustCompile(`((?:CPU|GPU 0), \d+ workers?)\s+start ([0-9.]+) s, first task per worker ([0-9.]+) s, (\d+) tasks ([0-9.]+) s \((\d+) tasks/s\), array ([0-9.]+) s, max \|z\| ([0-9.]+), array z ([+-][0-9.]+)`)

func init() {
	checks["04-virtual-gpus"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		html := joined(cells, func(c cellOutput) string { return c.html })
		svg := joined(cells, func(c cellOutput) string { return c.svg })
		rows := map[string]bool{}
		for _, m := range runRE.FindAllStringSubmatch(text, -1) {
			rows[m[1]] = true
			for _, i := range []int{5, 7} {
				if v, _ := strconv.ParseFloat(m[i], 64); !(v > 0) {
					t.Errorf("%s: a timed phase took %q s", m[1], m[i])
				}
			}
			if n, _ := strconv.Atoi(m[4]); n != 96 {
				t.Errorf("%s ran %d tasks, want the default 96", m[1], n)
			}
			// 96 sums of standard normals, each scaled to N(0, 1): all within 5.
			if z, _ := strconv.ParseFloat(m[8], 64); z > 5 {
				t.Errorf("%s: a task sum is %v standard deviations off", m[1], z)
			}
			if z, _ := strconv.ParseFloat(m[9], 64); math.Abs(z) > 6 {
				t.Errorf("%s: array sum z = %v", m[1], z)
			}
		}
		want := []string{"CPU, 1 worker", "CPU, 2 workers", "CPU, 4 workers"}
		if gpuPresent() {
			want = append(want, "GPU 0, 1 worker", "GPU 0, 2 workers", "GPU 0, 4 workers")
			contains(t, "output", text, "kernel warm-up: 96 tasks", "gpu0-v0: GPU 0, device memory limit", "gpu0-v1: GPU 0, device memory limit", "MIG: ")
			contains(t, "cluster HTML", html, "Virtual GPUs", "2 workers per GPU, MPS")
		} else {
			contains(t, "output", text, "GPU part skipped: no NVIDIA", "MIG check skipped: no NVIDIA")
			contains(t, "results table", html, "<td>GPU rows</td>", "skipped: no NVIDIA")
		}
		for _, w := range want {
			if !rows[w] {
				t.Errorf("no measurement for %q:\n%s", w, text)
			}
		}
		contains(t, "results table", html, `class="gpunotes-virtual"`, "<td>CPU, 4 workers</td>")
		contains(t, "charts", svg, "<svg", "<rect", "(log scale)", "Small tasks per second", "<polyline")
	}
}

var (
	svdCheckRE = regexp.MustCompile(`(CPU|GPU): reconstruction error ([0-9.e+-]+)(?: \(noise level ([0-9.e+-]+)\))?, \|\|U\^T U - I\|\| ([0-9.e+-]+), \|\|V V\^T - I\|\| ([0-9.e+-]+)`)
	svdTopRE   = regexp.MustCompile(`CPU: largest singular values \[([0-9.]+)[^\]]*\]; sqrt\(M\*N\)/2 = ([0-9.]+)`)
	svdPathRE  = regexp.MustCompile(`CPU: SVD in [0-9.]+ s, path cpu \((OpenBLAS [0-9.]+|gonum)\)`)
	svdMatchRE = regexp.MustCompile(`(CPU|GPU): top 20 singular values match the exact ones to ([0-9.e+-]+)`)
)

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Errorf("not a number: %q", s)
	}
	return v
}

func init() {
	checks["05-svd"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		html := joined(cells, func(c cellOutput) string { return c.html })
		svg := joined(cells, func(c cellOutput) string { return c.svg })
		if m := svdPathRE.FindStringSubmatch(text); m == nil {
			t.Errorf("the CPU SVD does not say which kernels ran:\n%s", text)
		} else if os.Getenv("CI") == "true" && !strings.HasPrefix(m[1], "OpenBLAS") {
			t.Errorf("CI installs OpenBLAS (.ci/apt-deps.sh), but the CPU SVD ran on %s", m[1])
		}
		contains(t, "output", text, "CPU: SVD in", "gpuarray.SVD(b): SVD of shape (4000, 400)",
			"use gpuarray.SVDCompressed", "CPU: SVDCompressed rank 20 in")
		exact, compressed := 0, 0
		for _, m := range svdCheckRE.FindAllStringSubmatch(text, -1) {
			rec, ou, ov := num(t, m[2]), num(t, m[4]), num(t, m[5])
			// Issue 7's tolerances: ||U^T U - I|| and ||A - U S Vt|| / ||A|| at most 1e-12.
			if ou > 1e-12 || ov > 1e-12 {
				t.Errorf("%s: U or V not orthonormal to 1e-12: %v, %v", m[1], ou, ov)
			}
			if m[3] == "" { // the exact SVD: rounding level
				exact++
				if rec > 1e-12 {
					t.Errorf("%s: SVD reconstruction error %v", m[1], rec)
				}
				continue
			}
			compressed++ // rank-k of low rank + noise: about the noise level
			if noise := num(t, m[3]); !(rec <= 1.5*noise) {
				t.Errorf("%s: SVDCompressed reconstruction error %v above the noise level %v", m[1], rec, noise)
			}
		}
		for _, m := range svdMatchRE.FindAllStringSubmatch(text, -1) {
			if d := num(t, m[2]); d > 1e-6 {
				t.Errorf("%s: compressed singular values off by %v", m[1], d)
			}
		}
		want := 1
		if gpuPresent() {
			want = 2
			contains(t, "output", text, "GPU: SVD in", "GPU: singular values differ from the CPU's", "GPU: SVDCompressed rank 20 in")
			if !strings.Contains(text, "(cuBLAS/cuSOLVER)") && !strings.Contains(text, "(own GEMM kernel;") && !strings.Contains(text, "GPU kernels unavailable") {
				t.Errorf("the GPU path does not say which kernels ran:\n%s", text)
			}
		} else {
			contains(t, "output", text, "GPU: skipped: no GPU (", "GPU: SVDCompressed: skipped: no GPU (")
			contains(t, "results table", html, "<td>GPU</td><td colspan=\"6\"><i>skipped: no GPU")
		}
		if exact != want || compressed != want {
			t.Errorf("%d SVD and %d SVDCompressed checks, want %d each:\n%s", exact, compressed, want, text)
		}
		if m := svdTopRE.FindStringSubmatch(text); m == nil {
			t.Errorf("no largest singular value:\n%s", text)
		} else if s0, want := num(t, m[1]), num(t, m[2]); math.Abs(s0-want) > 0.01*want {
			t.Errorf("largest singular value %v, want about sqrt(MN)/2 = %v", s0, want)
		}
		contains(t, "results table", html, `class="gpunotes-svd"`, "<td>CPU</td>")
		contains(t, "SVD result repr", html, "<b>SVD</b>", "<b>U</b> (4000, 400)", "<b>S</b> (400,)", "<b>V</b> (400, 400)", "<b>U</b> (4000, 20)")
		contains(t, "chart", svg, "<svg", "<rect", "(log scale)")
	}
}

func notebookNames(t *testing.T) []string {
	t.Helper()
	paths, _ := filepath.Glob("*.ipynb")
	var names []string
	for _, p := range paths {
		names = append(names, strings.TrimSuffix(p, ".ipynb"))
	}
	if len(names) == 0 {
		t.Fatal("no notebooks")
	}
	return names
}

func checkNotebook(t *testing.T, name, path string) {
	t.Helper()
	cells := outputsOf(t, path)
	for i, c := range cells {
		if len(c.errors) > 0 {
			t.Fatalf("%s: code cell %d failed: %v\n%s", name, i+1, c.errors, c.source)
		}
	}
	check, ok := checks[name]
	if !ok {
		t.Fatalf("no output checks for notebook %s", name)
	}
	check(t, cells)
}

// run runs cmd with a deadline, killing its process group after it.
func run(t *testing.T, cmd *exec.Cmd, timeout time.Duration) string {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A kernel started in a session of its own may keep the output open past cmd's exit.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out.String())
		}
	case <-time.After(timeout):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("%s did not finish in %v:\n%s", strings.Join(cmd.Args, " "), timeout, out.String())
	}
	return out.String()
}

// TestRunNotebooks executes every notebook with `gpunotes run` and checks its outputs.
func TestRunNotebooks(t *testing.T) {
	bin := testenv.Binary(t)
	for _, name := range notebookNames(t) {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), name+".ipynb")
			log := run(t, exec.Command(bin, "run", name+".ipynb", "-o", out), 5*time.Minute)
			t.Logf("gpunotes run %s:\n%s", name, log)
			checkNotebook(t, name, out)
		})
	}
}

// TestNbconvertNotebooks executes every notebook with `jupyter nbconvert --execute` through
// the installed kernelspec and checks the same outputs.
func TestNbconvertNotebooks(t *testing.T) {
	if testing.Short() {
		t.Skip("nbconvert runs are skipped in -short mode")
	}
	py := testenv.Python(t)
	env := testenv.InstallKernel(t)
	for _, name := range notebookNames(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.CommandContext(context.Background(), py, "-m", "jupyter", "nbconvert",
				"--to", "notebook", "--execute", "--ExecutePreprocessor.kernel_name=gpunotes",
				"--ExecutePreprocessor.timeout=300", "--output-dir", dir, "--output", name+".ipynb",
				name+".ipynb")
			cmd.Env = env
			log := run(t, cmd, 6*time.Minute)
			t.Logf("nbconvert %s:\n%s", name, log)
			checkNotebook(t, name, filepath.Join(dir, name+".ipynb"))
		})
	}
}

// slurmExpected says why notebook 06 may skip its SLURM cells here, or "" when it must run
// them: as root with slurm-wlm and munge installed (CI installs them).
func slurmExpected() string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	for _, cmd := range []string{"munged", "slurmctld", "slurmd", "sbatch", "squeue"} {
		if _, err := exec.LookPath(cmd); err != nil {
			if _, err := os.Stat(filepath.Join("/usr/sbin", cmd)); err != nil {
				return cmd + " missing"
			}
		}
	}
	return ""
}

var slurmSumRE = regexp.MustCompile(`sum on the SLURM workers ([0-9.]+), inline ([0-9.]+), equal: true`)

func init() {
	checks["06-slurm"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		html := joined(cells, func(c cellOutput) string { return c.html })
		if why := slurmExpected(); why != "" {
			checkSkipped(t, why, cells)
			return
		}
		if strings.Contains(text, "skipped:") {
			t.Fatalf("SLURM must run here (root, slurm-wlm installed) but the notebook skipped:\n%s", text)
		}
		contains(t, "output", text, "SLURM is up; SLURM_CONF = ", "idle localhost",
			"1 job submitted and its worker joined in", "#!/usr/bin/env bash", "#SBATCH --partition=debug",
			"#SBATCH --time=00:10:00", "#SBATCH --comment=gpunotes-notebook", " cuda-worker tcp://127.0.0.1:",
			"incPID(41) = 42, in the worker's pid", "Scale(2): the second job's worker joined in",
			"Scale(1): 1 worker left", "cluster closed, err = <nil>", "jobs left: 0", "SLURM stopped")
		if strings.Contains(text, "GPUNOTES_CLUSTER_TOKEN=") {
			t.Errorf("the job script shows the token:\n%s", text)
		}
		if m := slurmSumRE.FindStringSubmatch(text); m == nil || m[1] != m[2] {
			t.Errorf("the sum on SLURM workers is not the inline sum:\n%s", text)
		}
		if strings.Contains(text, "(PENDING)") {
			t.Errorf("a job whose worker joined is listed as pending:\n%s", text)
		}
		contains(t, "cluster HTML", html, "<table", "RUNNING", "Scheduler", "localhost")
	}
}

// checkSkipped asserts that every code cell of notebook 06 says it skipped.
func checkSkipped(t *testing.T, why string, cells []cellOutput) {
	t.Helper()
	for i, c := range cells {
		if !strings.Contains(c.text, "skipped: ") {
			t.Errorf("SLURM is not usable here (%s) but code cell %d does not say it skipped:\n%s", why, i+1, c.text)
		}
	}
}

// TestSLURMNotebookSkipsWithoutRoot runs notebook 06 as an unprivileged user: every cell
// must say why it skipped, and none may fail.
func TestSLURMNotebookSkipsWithoutRoot(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv to run the notebook as another user")
	}
	bin := testenv.Binary(t)
	dir := t.TempDir()
	// The user nobody must reach the copies: t.TempDir and its parent are private.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	for src, dst := range map[string]string{bin: "gpunotes", "06-slurm.ipynb": "06-slurm.ipynb"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
		filepath.Join(dir, "gpunotes"), "run", "06-slurm.ipynb", "-o", "out.ipynb")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	log := run(t, cmd, time.Minute)
	t.Logf("gpunotes run 06-slurm as nobody:\n%s", log)
	cells := outputsOf(t, filepath.Join(dir, "out.ipynb"))
	checkSkipped(t, "not root", cells)
	if !strings.Contains(cells[0].text, "skipped: a local test SLURM needs root") {
		t.Errorf("the first cell does not say why:\n%s", cells[0].text)
	}
}
