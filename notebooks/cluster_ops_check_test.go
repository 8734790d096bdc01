package notebooks_test

import "testing"

func init() {
	checks["17-cluster-ops"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		html := joined(cells, func(c cellOutput) string { return c.html })
		svg := html + joined(cells, func(c cellOutput) string { return c.svg })
		contains(t, "output", text,
			"scaled to 3 workers in ",
			"RunOnWorkers on [cpu0 cpu1 cpu2] - each PID is its process: true",
			"RunOnScheduler runs in this kernel: true <nil>",
			"plugin set up on 3 workers: up up up", `after UnregisterWorkerPlugin: ""`,
			"counter after 3 x 25 locked increments: 75", "the cell holds the lock: true true",
			"semaphore leases in use: 1 | queue length: 3 first: a | event set: true after Clear: false",
			"workers during the burst: 4", "workers after the burst: 1",
			"persisted chunks: 24", "copies after Replicate(p, 2): 48",
			"still listed: false - sum equal after the move: true",
			"new PIDs after Restart: true - sum equal: true", "again: true",
			"fire-and-forget ran: true | first completed: true 6", "all completed: 6 not done: 0",
			"squares of 4, 5, 6 sum to 77", "cancelled: cancelled", "urgent: [1 4 9]",
			"datasets: [settings twelve-squared] | twelve-squared = 144 | settings: map[chunks:100]",
			"report written: true", "array future: finished true", "square tasks: 4 true",
			"no scheduler there: true", "cancelled ArrayFuture: true", "cluster closed")
		contains(t, "progress HTML", html, "waitThenTriple", "20 / 20")
		contains(t, "task stream", svg, "<svg", "<rect", "<table", "square")
	}
}
