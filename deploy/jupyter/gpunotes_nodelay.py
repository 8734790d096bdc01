"""TCP_NODELAY on jupyter_server's kernel websockets, for every kernel.

jupyter_server (2.x) leaves Nagle's algorithm on for the websocket between the server and the
browser. A kernel answers one widget update with several small iopub frames (busy, echo,
updates, idle); the first leaves at once, the next waits until the browser acknowledges it,
and browsers delay that ACK (40 ms on Linux). Every widget round trip then takes 40-50 ms
more than the kernel needs, with ipykernel as with gpunotes. Tornado's own documentation
advises set_nodelay(True) for websockets that send small messages.

Use it from a jupyter_server_config.py (for example ~/.jupyter/jupyter_server_config.py):

    import gpunotes_nodelay          # this file, on sys.path
    gpunotes_nodelay.configure(c)

It sets ServerApp.kernel_websocket_connection_class to a subclass of jupyter_server's
default, ZMQChannelsWebsocketConnection, that sets TCP_NODELAY when the websocket opens.
Nothing else changes.
"""

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection


class NoDelayConnection(ZMQChannelsWebsocketConnection):
    """A kernel websocket connection that sends small frames at once."""

    async def connect(self):
        self.websocket_handler.set_nodelay(True)
        self.log.info("kernel websocket: TCP_NODELAY on")
        return await super().connect()


def configure(c):
    """Sets the kernel websocket connection class of config c to NoDelayConnection."""
    c.ServerApp.kernel_websocket_connection_class = NoDelayConnection
