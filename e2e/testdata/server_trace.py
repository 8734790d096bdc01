"""jupyter_server's side of the widget round trip, for the browser test: a subclass of
deploy/jupyter/gpunotes_nodelay.py's connection class that appends, for every kernel message
it relays, when it entered and when it left the server (Unix seconds) to the file named by
GPUNOTES_E2E_SERVER_TRACE, one JSON object a line: {"dir": "in"|"out", "id", "t0", "t1"}.
"in" is page to kernel, "out" kernel to page. Load it as the nodelay hook is loaded:

    import server_trace; server_trace.configure(c)
"""
import json
import os
import time

from gpunotes_nodelay import NoDelayConnection
from jupyter_server.services.kernels.connection.base import deserialize_msg_from_ws_v1

_path = os.environ.get("GPUNOTES_E2E_SERVER_TRACE", "")
_file = open(_path, "a", buffering=1) if _path else None


def _note(direction, header, t0):
    if _file is None:
        return
    try:
        mid = json.loads(header).get("msg_id")
    except (ValueError, TypeError):
        return
    _file.write(json.dumps({"dir": direction, "id": mid, "t0": t0, "t1": time.time()}) + "\n")


class TraceConnection(NoDelayConnection):
    """NoDelayConnection that notes when each message entered and left the server."""

    def handle_incoming_message(self, incoming_msg):
        t0 = time.time()
        r = super().handle_incoming_message(incoming_msg)
        if self.subprotocol == "v1.kernel.websocket.jupyter.org" and isinstance(incoming_msg, bytes):
            _, parts = deserialize_msg_from_ws_v1(incoming_msg)
            _note("in", parts[0], t0)
        return r

    def handle_outgoing_message(self, stream, outgoing_msg):
        t0 = time.time()
        _, parts = self.session.feed_identities(outgoing_msg)
        r = super().handle_outgoing_message(stream, outgoing_msg)
        # parts: signature, header, parent header, metadata, content, buffers
        _note("out", parts[1], t0)
        return r


def configure(c):
    """Sets the kernel websocket connection class of config c to TraceConnection."""
    c.ServerApp.kernel_websocket_connection_class = TraceConnection
