"""jupyter_client against the installed gpunotes kernel: interrupt, restart, and bad input."""
import json
import sys
import time
import unittest
import uuid

import zmq
from jupyter_client.manager import start_new_kernel
from jupyter_client.session import Session

TIMEOUT = 30


def run(kc, code, **kw):
    """Execute code; return (reply content, list of iopub (type, content)) until idle."""
    msg_id = kc.execute(code, **kw)
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=TIMEOUT)
    outs = []
    while True:
        m = kc.get_iopub_msg(timeout=TIMEOUT)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
        outs.append((m["msg_type"], m["content"]))
    return reply["content"], outs


class ClientTests(unittest.TestCase):
    def setUp(self):
        self.km, self.kc = start_new_kernel(kernel_name="gpunotes")

    def tearDown(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def assert_alive(self):
        reply, outs = run(self.kc, "40 + 2")
        self.assertEqual(reply["status"], "ok")
        results = [c for t, c in outs if t == "execute_result"]
        self.assertTrue(results, (reply, outs))
        self.assertEqual(results[0]["data"]["text/plain"], "42")

    def test_interrupt_infinite_loop(self):
        msg_id = self.kc.execute("for {}")
        time.sleep(0.5)
        t0 = time.time()
        self.km.interrupt_kernel()
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "KeyboardInterrupt")
        self.assertLess(time.time() - t0, 5)
        self.assert_alive()

    def test_sigint_interrupts(self):
        self.kc.execute("for {}")
        time.sleep(0.5)
        self.km.signal_kernel(2)
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        self.assertEqual(reply["content"]["ename"], "KeyboardInterrupt")
        self.assert_alive()

    def test_restart_gives_fresh_state_and_history_persists(self):
        run(self.kc, "keepMe := 7")
        self.km.restart_kernel(now=False)
        self.kc.wait_for_ready(timeout=TIMEOUT)
        reply, outs = run(self.kc, "keepMe")
        self.assertEqual(reply["status"], "error")
        self.assert_alive()
        msg_id = self.kc.history(hist_access_type="search", pattern="keepMe*")
        h = self.kc.get_shell_msg(timeout=TIMEOUT)["content"]["history"]
        self.assertTrue(any(e[2] == "keepMe := 7" for e in h), h)
        sessions = {e[0] for e in h}
        self.assertTrue(sessions, h)

    def test_exit_and_fatal_are_cell_errors(self):
        for code in ['import "os"\nos.Exit(1)', 'import "log"\nlog.Fatal("bad")']:
            reply, outs = run(self.kc, code)
            self.assertEqual(reply["status"], "error", code)
            self.assertEqual([t for t, _ in outs if t == "error"], ["error"], outs)
        self.assert_alive()

    def test_goroutine_nil_panic(self):
        reply, outs = run(self.kc, 'import "time"\ngo func() { var p *struct{ A int }; p.A = 1 }()\ntime.Sleep(100 * time.Millisecond)')
        self.assertEqual(reply["status"], "error")
        self.assertIn("goroutine", reply["evalue"])
        self.assert_alive()

    def test_pager_after_code(self):
        # "name??" on the last line, after other code: the code runs, then the pager shows the
        # cell's func with its source; "name?" alone shows no source.
        reply, outs = run(self.kc, "y := 21\nfunc twice(x int) int {\n\treturn 2 * x\n}\ntwice??")
        self.assertEqual(reply["status"], "ok", reply)
        pages = [p for p in reply["payload"] if p.get("source") == "page"]
        self.assertEqual(len(pages), 1, reply)
        text = pages[0]["data"]["text/plain"]
        self.assertIn("func twice(x int) int {\n\treturn 2 * x\n}", text)
        reply, outs = run(self.kc, "twice(y)")
        self.assertEqual([c["data"]["text/plain"] for t, c in outs if t == "execute_result"], ["42"])
        reply, outs = run(self.kc, "twice?")
        text = reply["payload"][0]["data"]["text/plain"]
        self.assertIn("func(int) int", text)
        self.assertNotIn("return 2 * x", text)

    def test_syntax_error_has_cell_position(self):
        reply, outs = run(self.kc, "x := 1\ny := (x +\n  ]")
        self.assertEqual(reply["status"], "error")
        self.assertRegex(reply["evalue"], r"^3:\d+")
        self.assert_alive()

    def test_stdin(self):
        msg_id = self.kc.execute('import "fmt"\nvar name string\nfmt.Scanln(&name)\n"hi " + name', allow_stdin=True)
        req = self.kc.get_stdin_msg(timeout=TIMEOUT)
        self.assertEqual(req["msg_type"], "input_request")
        self.kc.input("gopher")
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        self.assertEqual(reply["content"]["status"], "ok", reply["content"])
        while True:
            m = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if m["msg_type"] == "execute_result" and m["parent_header"]["msg_id"] == msg_id:
                self.assertEqual(m["content"]["data"]["text/plain"], '"hi gopher"')
                break

    def test_stop_on_error_aborts_queue(self):
        first = self.kc.execute('import "time"\ntime.Sleep(300 * time.Millisecond)\npanic("first")')
        second = self.kc.execute("1 + 1")
        replies = {}
        while len(replies) < 2:
            r = self.kc.get_shell_msg(timeout=TIMEOUT)
            replies[r["parent_header"]["msg_id"]] = r["content"]["status"]
        self.assertEqual(replies[first], "error")
        self.assertEqual(replies[second], "aborted")

    def _raw_shell(self):
        ctx = zmq.Context.instance()
        sock = ctx.socket(zmq.DEALER)
        sock.connect("%s://%s:%d" % (self.km.transport, self.km.ip, self.km.shell_port))
        return sock

    def test_bad_frames_wrong_signature_unknown_type_and_huge_message(self):
        sock = self._raw_shell()
        # Malformed: no delimiter, and invalid JSON in a correctly signed message.
        sock.send_multipart([b"garbage"])
        # Our own session: one sharing the client's id and pid would repeat its msg_ids.
        s = Session(key=self.km.session.key, signature_scheme=self.km.session.signature_scheme)
        bad_json = [b"{not json", b"{}", b"{}", b"{}"]
        sock.send_multipart([b"<IDS|MSG>", s.sign(bad_json)] + bad_json)
        # Wrong signature on an execute that would print: must never run.
        msg = s.msg("execute_request", {"code": 'fmt.Println("SHOULD NOT RUN")', "silent": False})
        parts = [s.pack(msg["header"]), s.pack({}), s.pack({}), s.pack(msg["content"])]
        sock.send_multipart([b"<IDS|MSG>", b"0" * 64] + parts)
        # Unknown msg_type: an error reply, not silence.
        s.send(sock, s.msg("frobnicate_request", {}))
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        self.assertTrue(poller.poll(TIMEOUT * 1000), "no reply to an unknown msg_type")
        _, reply = s.feed_identities(sock.recv_multipart())
        reply = s.deserialize(reply)
        self.assertEqual(reply["msg_type"], "frobnicate_reply")
        self.assertEqual(reply["content"]["status"], "error")
        sock.close(0)
        self.assert_alive()
        # Nothing from the wrongly signed execute reached iopub.
        while True:
            try:
                m = self.kc.get_iopub_msg(timeout=0.5)
            except Exception:
                break
            if m["msg_type"] == "stream":
                self.assertNotIn("SHOULD NOT RUN", m["content"]["text"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
