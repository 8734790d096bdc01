package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Job is one worker job as SLURM last reported it.
type Job struct {
	ID     string
	State  string // SLURM's state (PENDING, RUNNING, COMPLETING, CANCELLED, …); ENDED once squeue forgot it
	Nodes  string // the node list ("" while pending)
	Reason string // why it is pending or why it ended ("None" when there is no reason)
	// Cancelled is set once Scale or Close cancelled the job.
	Cancelled bool
}

// terminal reports whether a job state means the job is over (or ending).
func terminal(state string) bool {
	switch state {
	case "PENDING", "CONFIGURING", "RUNNING", "RESIZING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD",
		"REQUEUE_FED", "RESV_DEL_HOLD", "SIGNALING", "STAGE_OUT", "STOPPED", "":
		return false
	}
	return true
}

// describe is "job 12 (PENDING: Resources)" for errors and tables.
func (j Job) describe() string {
	s := j.State
	if j.Reason != "" && j.Reason != "None" {
		s += ": " + j.Reason
	}
	if j.Nodes != "" && j.Nodes != "(null)" {
		s += " on " + j.Nodes
	}
	return fmt.Sprintf("job %s (%s)", j.ID, s)
}

// ErrNoSbatch is wrapped by New's error when sbatch is not in PATH.
var ErrNoSbatch = errors.New("sbatch not found in PATH")

// commands runs SLURM's client commands with an environment (the token, SLURM_CONF).
type commands struct {
	env []string
}

// run runs a SLURM command and returns its stdout; a failure carries SLURM's message.
func (c *commands) run(ctx context.Context, stdin string, name string, args ...string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		if name == "sbatch" {
			return "", fmt.Errorf("%w (is this a SLURM login node? SLURM's client commands must be installed and in PATH): %v", ErrNoSbatch, err)
		}
		return "", fmt.Errorf("%s not found in PATH: %w", name, err)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = c.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		if msg == "" {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return "", fmt.Errorf("%s: %w: %s", name, err, msg)
	}
	return stdout.String(), nil
}

// submit runs sbatch with the script on stdin and returns the job id.
func (c *commands) submit(ctx context.Context, script string) (string, error) {
	out, err := c.run(ctx, script, "sbatch", "--parsable", "--export=ALL")
	if err != nil {
		return "", fmt.Errorf("SLURM rejected the worker job: %w", err)
	}
	id := strings.TrimSpace(out)
	if i := strings.IndexByte(id, ';'); i >= 0 { // "id;cluster" on federated sites
		id = id[:i]
	}
	if id == "" || strings.ContainsAny(id, " \n") {
		return "", fmt.Errorf("sbatch printed %q, not a job id", out)
	}
	return id, nil
}

// queue returns the jobs named name that squeue knows, in any state, by id.
func (c *commands) queue(ctx context.Context, name string) (map[string]Job, error) {
	out, err := c.run(ctx, "", "squeue", "--noheader", "--states=all", "--name="+name, "--format=%i|%T|%N|%r")
	if err != nil {
		return nil, err
	}
	return parseQueue(out), nil
}

// parseQueue reads squeue's "%i|%T|%N|%r" lines.
func parseQueue(out string) map[string]Job {
	jobs := map[string]Job{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 4 || f[0] == "" {
			continue
		}
		jobs[f[0]] = Job{ID: f[0], State: f[1], Nodes: f[2], Reason: f[3]}
	}
	return jobs
}

// cancel runs scancel on job ids.
func (c *commands) cancel(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := c.run(ctx, "", "scancel", ids...); err != nil {
		return fmt.Errorf("cancel jobs %s: %w", strings.Join(ids, ","), err)
	}
	return nil
}
