package slurm_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster/slurm"
)

// fakeSLURM puts sbatch, squeue and scancel scripts first in PATH that keep their jobs in
// files of a temporary directory: every job is RUNNING on node1 until cancelled. It returns
// that directory.
func fakeSLURM(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	scripts := map[string]string{
		"sbatch": `#!/bin/sh
d=$(dirname "$0")
n=$(( $(cat "$d/next" 2>/dev/null || echo 100) + 1 ))
echo $n >"$d/next"
cat >"$d/script-$n"
env >"$d/env-$n"
echo "$*" >"$d/args-$n"
echo $n >>"$d/jobs"
echo "$n"
`,
		"squeue": `#!/bin/sh
d=$(dirname "$0")
[ -f "$d/jobs" ] || exit 0
for id in $(cat "$d/jobs"); do
	if grep -qx "$id" "$d/cancelled" 2>/dev/null; then
		echo "$id|CANCELLED|node1|None"
	else
		echo "$id|RUNNING|node1|None"
	fi
done
`,
		"scancel": `#!/bin/sh
d=$(dirname "$0")
for id in "$@"; do echo "$id" >>"$d/cancelled"; done
`,
	}
	for name, s := range scripts {
		if err := os.WriteFile(filepath.Join(d, name), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", d+string(os.PathListSeparator)+os.Getenv("PATH"))
	return d
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

func TestNoSbatch(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := slurm.New(slurm.Options{Jobs: 1, Binary: "/bin/true"})
	if !errors.Is(err, slurm.ErrNoSbatch) || !strings.Contains(err.Error(), "sbatch not found in PATH") {
		t.Fatalf("New without sbatch: got %v, want ErrNoSbatch", err)
	}
}

func TestRejectedJob(t *testing.T) {
	d := t.TempDir()
	sbatch := "#!/bin/sh\necho 'sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(d, "sbatch"), []byte(sbatch), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "squeue"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", d+string(os.PathListSeparator)+os.Getenv("PATH"))
	_, err := slurm.New(slurm.Options{Jobs: 1, Account: "nobody", Binary: "/bin/true"})
	if err == nil || !strings.Contains(err.Error(), "SLURM rejected the worker job") || !strings.Contains(err.Error(), "Invalid account") {
		t.Fatalf("rejected job: got %v, want SLURM's message", err)
	}
}

func TestJobScriptScaleClose(t *testing.T) {
	d := fakeSLURM(t)
	c, err := slurm.New(slurm.Options{Partition: "gpu", Account: "proj1", GPUsPerJob: 2, Walltime: "01:30:00",
		Memory: "64G", CPUsPerJob: 16, JobName: "gpunotes-test", ExtraDirectives: []string{"#SBATCH --constraint=h100", "--qos=high"},
		Prologue: []string{"module load cuda"}, Binary: "/opt/gpunotes/bin/gpunotes", LogDirectory: "/shared/logs"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	script := c.JobScript()
	for _, want := range []string{
		"#!/usr/bin/env bash\n", "#SBATCH --job-name=gpunotes-test\n", "#SBATCH --partition=gpu\n",
		"#SBATCH --account=proj1\n", "#SBATCH --gres=gpu:2\n", "#SBATCH --time=01:30:00\n", "#SBATCH --mem=64G\n",
		"#SBATCH --cpus-per-task=16\n", "#SBATCH --constraint=h100\n", "#SBATCH --qos=high\n",
		"#SBATCH --output=/shared/logs/%x-%j.out\n", "module load cuda\n",
		"exec /opt/gpunotes/bin/gpunotes cuda-worker " + c.Address() + ` --name-prefix "gpunotes-test-${SLURM_JOB_ID}" --nworkers 2` + "\n",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("job script lacks %q:\n%s", want, script)
		}
	}
	if strings.Contains(script, c.Token()) {
		t.Error("the job script contains the token")
	}
	if !strings.HasPrefix(c.Address(), "tcp://127.0.0.1:") {
		t.Errorf("default address %q is not loopback", c.Address())
	}

	if err := c.Scale(5); err != nil { // 5 workers at 2 per job: 3 jobs
		t.Fatal(err)
	}
	jobs := readLines(t, filepath.Join(d, "jobs"))
	if len(jobs) != 3 {
		t.Fatalf("Scale(5) with 2 GPUs per job submitted jobs %v, want 3", jobs)
	}
	sub, err := os.ReadFile(filepath.Join(d, "script-"+jobs[0]))
	if err != nil || string(sub) != script {
		t.Fatalf("sbatch got a script other than JobScript (%v):\n%s", err, sub)
	}
	env, _ := os.ReadFile(filepath.Join(d, "env-"+jobs[0]))
	if !strings.Contains(string(env), "GPUNOTES_CLUSTER_TOKEN="+c.Token()+"\n") {
		t.Error("sbatch's environment lacks the token")
	}
	if args := readLines(t, filepath.Join(d, "args-"+jobs[0])); strings.Join(args, " ") != "--parsable --export=ALL" {
		t.Errorf("sbatch args %v", args)
	}
	if err := c.ScaleJobs(1); err != nil {
		t.Fatal(err)
	}
	if got := readLines(t, filepath.Join(d, "cancelled")); strings.Join(got, ",") != jobs[2]+","+jobs[1] {
		t.Fatalf("ScaleJobs(1) cancelled %v, want the two newest of %v", got, jobs)
	}
	html := c.HTML()
	for _, want := range []string{"SLURM cluster", jobs[0], "RUNNING", "no worker yet", "gpunotes-test", "127.0.0.1"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q:\n%s", want, html)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readLines(t, filepath.Join(d, "cancelled")); len(got) != 3 || got[2] != jobs[0] {
		t.Fatalf("Close cancelled %v, want every job", got)
	}
	if err := c.Scale(1); err == nil {
		t.Error("Scale after Close: no error")
	}
}

func TestWorkerNeverJoins(t *testing.T) {
	fakeSLURM(t)
	start := time.Now()
	_, err := slurm.New(slurm.Options{Jobs: 1, Binary: "/bin/true", JobName: "gpunotes-nojoin", StartTimeout: 1500 * time.Millisecond})
	if err == nil {
		t.Fatal("New returned no error though no worker joined")
	}
	for _, want := range []string{"0 of 1 workers joined", "job 101 (RUNNING on node1) is running, 0 of 1 workers joined"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("New took %v to give up", time.Since(start))
	}
}

func TestBadOptions(t *testing.T) {
	fakeSLURM(t)
	if _, err := slurm.New(slurm.Options{Jobs: -1}); err == nil {
		t.Error("Jobs -1: no error")
	}
	if _, err := slurm.New(slurm.Options{JobName: "a b"}); err == nil {
		t.Error("JobName with a space: no error")
	}
	c, err := slurm.New(slurm.Options{Binary: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Adapt(3, 1); err == nil {
		t.Error("Adapt(3, 1): no error")
	}
	if err := c.Scale(-1); err == nil {
		t.Error("Scale(-1): no error")
	}
}
