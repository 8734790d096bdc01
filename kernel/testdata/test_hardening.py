"""Hostile and careless input against the gpunotes kernel, with ipykernel (libzmq) on the same bytes
as the reference. Raw TCP and pyzmq sockets play the attacker; jupyter_client is the real client."""
import os
import socket
import struct
import sys
import tempfile
import time
import unittest

import zmq
from jupyter_client.manager import KernelManager
from jupyter_client.session import Session

TIMEOUT = 30


def greeting():
    g = bytearray(64)
    g[0], g[9], g[10], g[11] = 0xFF, 0x7F, 3, 0
    g[12:16] = b"NULL"
    return bytes(g)


def ready(sock_type=b"DEALER"):
    prop = bytes([11]) + b"Socket-Type" + struct.pack(">I", len(sock_type)) + sock_type
    body = bytes([5]) + b"READY" + prop
    return bytes([0x04, len(body)]) + body


# The 74 bytes of the issue: a greeting, then a command frame whose header claims 2^40 bytes.
HUGE_COMMAND = greeting() + bytes([0x06]) + struct.pack(">Q", 1 << 40) + b"R"


class Kernel:
    """A kernel started through jupyter_client, its stderr kept in a file."""

    def __init__(self, name, env=None):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        self.km = KernelManager(kernel_name=name)
        e = dict(os.environ)
        e.update(env or {})
        self.km.start_kernel(env=e, stderr=self.log)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def port(self, channel):
        return getattr(self.km, channel + "_port")

    def execute(self, code, kc=None, **kw):
        kc = kc or self.kc
        msg_id = kc.execute(code, **kw)
        while True:
            r = kc.get_shell_msg(timeout=TIMEOUT)
            if r["parent_header"].get("msg_id") == msg_id:
                return r["content"]

    def alive(self):
        """The kernel answers a cell and its heartbeat through a fresh client."""
        kc = self.km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=TIMEOUT)
            code = "40 + 2"
            ok = self.execute(code, kc=kc)["status"] == "ok"
            time.sleep(0.1)
            return ok and self.km.is_alive() and kc.hb_channel.is_beating()
        except Exception:
            return False
        finally:
            kc.stop_channels()

    def log_text(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)
        os.unlink(self.log.name)


def send_raw(port, data, wait=1.0):
    """Sends data on a raw TCP connection, then reads until the peer closes or wait passes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(data)
    s.settimeout(wait)
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return got, True
            got += b
    except ConnectionResetError:
        return got, True
    except socket.timeout:
        return got, False
    finally:
        s.close()


class SocketBounds(unittest.TestCase):
    """Item 1: bounded before authenticated."""

    @classmethod
    def setUpClass(cls):
        cls.go = Kernel("gpunotes", {"GPUNOTES_HANDSHAKE_TIMEOUT": "2s", "GPUNOTES_MAX_MESSAGE": str(8 << 20)})
        cls.py = Kernel("python3")

    @classmethod
    def tearDownClass(cls):
        cls.go.close()
        cls.py.close()

    def test_huge_frame_headers(self):
        # ipykernel (libzmq): the 2^40-byte allocation fails, libzmq drops that connection and
        # the kernel keeps serving. gpunotes must do the same, without allocating.
        for k, name in ((self.py, "ipykernel"), (self.go, "gpunotes")):
            for ch, typ in (("shell", b"DEALER"), ("hb", b"REQ"), ("control", b"DEALER"), ("iopub", b"SUB")):
                huge_message = greeting() + ready(typ) + bytes([0x02]) + struct.pack(">Q", 1 << 40) + b"x"
                for payload in (HUGE_COMMAND, huge_message):
                    _, closed = send_raw(k.port(ch), payload)
                    if k is self.go:
                        self.assertTrue(closed, "%s kept a connection that declared 2^40 bytes on %s" % (name, ch))
            self.assertTrue(k.alive(), "%s died after 2^40-byte frame headers" % name)
        self.assertIn("declares 1099511627776 bytes", self.go.log_text())

    def test_idle_connection_does_not_block_others(self):
        # ipykernel (libzmq) greets each connection on its own; an idle one blocks nobody and is
        # dropped after ZMQ_HANDSHAKE_IVL (30 s by default). gpunotes: the same, with its deadline.
        for k in (self.py, self.go):
            idle = [socket.create_connection(("127.0.0.1", k.port(ch))) for ch in ("shell", "control", "stdin", "hb")]
            t0 = time.time()
            self.assertTrue(k.alive(), "a new client could not connect beside an idle connection")
            self.assertLess(time.time() - t0, 15)
            if k is self.go:
                idle[0].settimeout(6)
                got = b""
                while True:
                    b = idle[0].recv(1024)
                    if not b:
                        break
                    got += b
                self.assertEqual(got, greeting(), "gpunotes should send its greeting, then close at the deadline")
                self.assertLess(time.time() - t0, 10)
            for s in idle:
                s.close()
        self.assertIn("nothing within 2s", self.go.log_text())

    def test_message_limit(self):
        # ipykernel (libzmq, ZMQ_MAXMSGSIZE -1) has no limit; gpunotes drops a connection whose
        # message exceeds GPUNOTES_MAX_MESSAGE (8 MB here) and keeps serving the others.
        k = self.go
        ctx = zmq.Context.instance()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect("tcp://127.0.0.1:%d" % k.port("shell"))
        s = Session(key=k.km.session.key, signature_scheme=k.km.session.signature_scheme)
        s.send(sock, s.msg("execute_request", {"code": "// " + "x" * (16 << 20), "silent": False}))
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        self.assertFalse(poller.poll(3000), "a 16 MB message above the 8 MB limit got a reply")
        sock.close(0)
        self.assertIn("limit 8388608", k.log_text())
        self.assertTrue(k.alive())
        # Below the limit: served.
        r = k.execute("len(`" + "y" * (4 << 20) + "`)")
        self.assertEqual(r["status"], "ok", r)


if __name__ == "__main__":
    unittest.main(verbosity=2)
