"""jupyter_client against the installed gpunotes kernel: every kind of work interrupted, then
the next cell's result; runaway recursion (in a cell, in a goroutine that outlives its cell, in
a widget callback); goroutine floods beside the heartbeat and control.

Timeouts are generous (the machine may be busy): they bound a hang, they do not time work.
"""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

import zmq
from jupyter_client.manager import start_new_kernel

TIMEOUT = 120


def wait_reply(kc, msg_id):
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=TIMEOUT)
    return reply["content"]


def outputs(kc, msg_id):
    """IOPub messages of msg_id until its idle: [(type, content)]."""
    outs = []
    while True:
        m = kc.get_iopub_msg(timeout=TIMEOUT)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return outs
        outs.append((m["msg_type"], m["content"]))


def run(kc, code, **kw):
    msg_id = kc.execute(code, **kw)
    reply = wait_reply(kc, msg_id)
    return reply, outputs(kc, msg_id)


def wait_iopub(kc, pred):
    """The first IOPub message for which pred holds."""
    while True:
        m = kc.get_iopub_msg(timeout=TIMEOUT)
        if pred(m):
            return m


def wait_busy(kc, msg_id):
    """Waits until the kernel has started msg_id (its busy status)."""
    while True:
        m = kc.get_iopub_msg(timeout=TIMEOUT)
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status" and m["content"]["execution_state"] == "busy":
            return


class KernelCase(unittest.TestCase):
    env = {}

    def setUp(self):
        env = dict(os.environ)
        env.update(self.env)
        self.km, self.kc = start_new_kernel(kernel_name="gpunotes", env=env)

    def tearDown(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def assert_next_cell(self, what):
        reply, outs = run(self.kc, "1+1")
        self.assertEqual(reply["status"], "ok", (what, reply))
        results = [c["data"]["text/plain"] for t, c in outs if t == "execute_result"]
        self.assertEqual(results, ["2"], (what, outs))

    def heartbeat(self):
        """One ping through the heartbeat socket; True if it came back."""
        ctx = zmq.Context.instance()
        s = ctx.socket(zmq.REQ)
        s.linger = 0
        s.connect("%s://%s:%d" % (self.km.transport, self.km.ip, self.km.hb_port))
        try:
            s.send(b"ping")
            return s.poll(TIMEOUT * 1000) != 0 and s.recv() == b"ping"
        finally:
            s.close()

    def control_kernel_info(self):
        msg = self.kc.session.msg("kernel_info_request")
        self.kc.control_channel.send(msg)
        while True:
            r = self.kc.control_channel.get_msg(timeout=TIMEOUT)
            if r["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return r["content"]


class InterruptTests(KernelCase):
    def interrupt(self, msg_id, code, allow_stdin=False):
        wait_busy(self.kc, msg_id)
        time.sleep(0.3)  # into the work itself, past its start
        self.km.interrupt_kernel()
        return wait_reply(self.kc, msg_id)

    def test_interrupt_a_cell(self):
        msg_id = self.kc.execute("for {}")
        reply = self.interrupt(msg_id, "for {}")
        self.assertEqual(reply["ename"], "KeyboardInterrupt")
        self.assert_next_cell("a cell")

    def test_interrupt_a_user_expression(self):
        # The adversarial report: the next cell gave no result after this.
        msg_id = self.kc.execute("1", user_expressions={"x": "func() int { for {} }()"})
        reply = self.interrupt(msg_id, "user expression")
        self.assertEqual(reply["status"], "ok", reply)
        self.assertEqual(reply["user_expressions"]["x"]["status"], "error", reply)
        self.assertEqual(reply["user_expressions"]["x"]["ename"], "KeyboardInterrupt", reply)
        self.assert_next_cell("a user expression")

    def test_interrupt_input(self):
        msg_id = self.kc.execute('import "fmt"\nvar name string\nfmt.Scanln(&name)\nname', allow_stdin=True)
        req = self.kc.get_stdin_msg(timeout=TIMEOUT)
        self.assertEqual(req["msg_type"], "input_request")
        self.km.interrupt_kernel()
        reply = wait_reply(self.kc, msg_id)
        self.assertEqual(reply["status"], "error", reply)
        self.assert_next_cell("input()")

    def test_interrupt_a_comm_callback(self):
        msg_id = self.kc.execute('s := widget.NewIntSlider(5, 0, 100, widget.T{"description": "n"}); s')
        wait_reply(self.kc, msg_id)
        opens = [c for t, c in outputs(self.kc, msg_id) if t == "comm_open"]
        self.assertEqual(len(opens), 1)
        reply, _ = run(self.kc, 's.Observe("value", func(c widget.Change) { for {} })')
        self.assertEqual(reply["status"], "ok", reply)
        msg = self.kc.session.msg("comm_msg", {"comm_id": opens[0]["comm_id"],
                                               "data": {"method": "update", "state": {"value": 8}, "buffer_paths": []}})
        self.kc.shell_channel.send(msg)
        wait_busy(self.kc, msg["header"]["msg_id"])
        time.sleep(0.3)
        self.km.interrupt_kernel()
        outputs(self.kc, msg["header"]["msg_id"])  # its idle: the callback stopped
        self.assert_next_cell("a comm callback")

    def test_interrupt_a_long_compute(self):
        code = ("x := gpuarray.NewRandomState(1).Normal(0, 1, gpuarray.Shape(200000, 20000), gpuarray.Chunks(2000, 20000))\n"
                "x.Sum().Compute()")
        msg_id = self.kc.execute(code)
        reply = self.interrupt(msg_id, code)
        self.assertEqual(reply["status"], "error", reply)
        self.assert_next_cell("a long Compute")


class RecursionTests(KernelCase):
    def test_runaway_recursion_is_an_error_and_the_session_stays(self):
        run(self.kc, "kept := 41")
        run(self.kc, "func rec(n int) int { return rec(n+1) + 1 }")
        reply, outs = run(self.kc, "rec(0)")
        self.assertEqual(reply["status"], "error", reply)
        self.assertEqual(reply["ename"], "RecursionError", reply)
        self.assertIn("rec called itself", reply["evalue"])
        tb = "\n".join(reply["traceback"])
        self.assertIn("first: the cell's statements, Cell In[3], line 1", tb)
        self.assertIn("last: rec, Cell In[2], line 1", tb)
        errors = [c for t, c in outs if t == "error"]
        self.assertEqual(len(errors), 1, outs)
        reply, outs = run(self.kc, "kept + 1")
        self.assertEqual([c["data"]["text/plain"] for t, c in outs if t == "execute_result"], ["42"], outs)


    def test_goroutine_recursion_after_its_cell_is_an_error_of_that_cell(self):
        run(self.kc, "kept := 41")
        run(self.kc, "func rec(n int) int { return rec(n+1) + 1 }")
        msg_id = self.kc.execute("go rec(0)")
        reply = wait_reply(self.kc, msg_id)
        self.assertEqual(reply["status"], "ok", reply)
        # The goroutine recurses after its cell's reply: its error comes with that cell as parent.
        err = wait_iopub(self.kc, lambda m: m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "error")
        self.assertEqual(err["content"]["ename"], "RecursionError", err)
        self.assertIn("in a goroutine started by this cell", err["content"]["evalue"])
        self.assertIn("rec called itself", err["content"]["evalue"])
        self.assertTrue(self.heartbeat(), "no heartbeat")
        reply, outs = run(self.kc, "kept + 1")
        self.assertEqual([c["data"]["text/plain"] for t, c in outs if t == "execute_result"], ["42"], outs)

    def test_widget_callback_recursion_is_an_error_in_its_output(self):
        run(self.kc, "kept := 41")
        run(self.kc, "func deep(n int) int { return deep(n+1) + 1 }")
        msg_id = self.kc.execute('s := widget.NewIntSlider(5, 0, 100); s')
        wait_reply(self.kc, msg_id)
        opens = [c for t, c in outputs(self.kc, msg_id) if t == "comm_open"]
        self.assertEqual(len(opens), 1)
        reply, _ = run(self.kc, 's.Observe("value", func(c widget.Change) { deep(0) })')
        self.assertEqual(reply["status"], "ok", reply)
        msg = self.kc.session.msg("comm_msg", {"comm_id": opens[0]["comm_id"],
                                               "data": {"method": "update", "state": {"value": 8}, "buffer_paths": []}})
        self.kc.shell_channel.send(msg)
        # Until the comm message's idle: the callback's error reaches the front end (the
        # Output widget the callback writes to, through its comm, or an error output).
        outs = outputs(self.kc, msg["header"]["msg_id"])
        text = json.dumps(outs)
        self.assertIn("RecursionError", text, outs)
        self.assertIn("deep called itself", text, outs)
        self.assertTrue(self.heartbeat(), "no heartbeat")
        reply, outs = run(self.kc, "kept + 1")
        self.assertEqual([c["data"]["text/plain"] for t, c in outs if t == "execute_result"], ["42"], outs)


FLOOD = "ch := make(chan int)\nfor i := 0; i < 1000000; i++ { go func() { <-ch }() }"


class FloodSizedFromMemory(KernelCase):
    # The bound is a quarter of what the process can get at 32 KiB a goroutine: with a Go
    # memory limit of 1 GiB, 8192 goroutines.
    env = {"GOMEMLIMIT": "1GiB"}

    def test_flood_is_an_error_and_heartbeat_and_control_answer(self):
        reply, outs = run(self.kc, FLOOD)
        self.assertEqual(reply["status"], "error", reply)
        self.assertIn("8192 goroutines started by cells are still running", reply["evalue"])
        self.assertIn("sized from free memory", reply["evalue"])
        # 8192 goroutines still block on ch: the kernel answers on every channel.
        self.assertTrue(self.heartbeat(), "no heartbeat")
        self.assertEqual(self.control_kernel_info()["status"], "ok")
        self.assert_next_cell("a flood")
        run(self.kc, "close(ch)")
        self.assert_next_cell("after the flood ended")


class FloodConfigured(KernelCase):
    env = {"GPUNOTES_MAX_GOROUTINES": "500"}

    def test_configured_bound(self):
        reply, outs = run(self.kc, FLOOD)
        self.assertEqual(reply["status"], "error", reply)
        self.assertIn("500 goroutines started by cells are still running", reply["evalue"])
        self.assertIn("GPUNOTES_MAX_GOROUTINES", reply["evalue"])
        self.assertTrue(self.heartbeat(), "no heartbeat")
        run(self.kc, "close(ch)")
        # Once they ended, as many start again.
        reply, outs = run(self.kc, "done := make(chan int)\nfor i := 0; i < 400; i++ { go func() { done <- 1 }() }\nn := 0\nfor i := 0; i < 400; i++ { n += <-done }\nn")
        self.assertEqual([c["data"]["text/plain"] for t, c in outs if t == "execute_result"], ["400"], (reply, outs))


LAUNCHER = r"""
import time
from jupyter_client.manager import KernelManager
km = KernelManager(kernel_name="gpunotes")
km.start_kernel()
kc = km.client()
kc.start_channels()
kc.wait_for_ready(timeout=120)
print(km.provisioner.pid, flush=True)
time.sleep(3600)
"""


def gone(pid):
    """True once pid has exited (a zombie not yet reaped counts as exited)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


class LauncherDeathTests(unittest.TestCase):
    def test_kernel_exits_when_its_launcher_is_killed(self):
        # A launcher as a Jupyter server is one (jupyter_client's KernelManager), killed -9:
        # it cannot shut its kernel down, which runs in a session of its own.
        launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER], stdout=subprocess.PIPE, text=True)
        pid = 0
        try:
            line = launcher.stdout.readline()
            self.assertTrue(line.strip().isdigit(), "launcher printed %r" % line)
            pid = int(line)
            self.assertFalse(gone(pid), "the kernel exited before its launcher was killed")
            launcher.send_signal(signal.SIGKILL)
            launcher.wait(TIMEOUT)
            deadline = time.monotonic() + TIMEOUT
            while not gone(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            self.assertTrue(gone(pid), "kernel %d still runs %ds after its launcher was killed" % (pid, TIMEOUT))
        finally:
            if launcher.poll() is None:
                launcher.kill()
                launcher.wait()
            launcher.stdout.close()
            if pid and not gone(pid):
                os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    unittest.main(verbosity=2)
