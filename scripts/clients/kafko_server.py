"""kafko started by a client script on a fixed Kafka port and data directory, so that a
restarted server is found at the same address: started, SIGKILLed, stopped."""

import os
import signal
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """The kafko binary with its data in WORK/NAME/data and its log in WORK/NAME/server.log."""

    def __init__(self, binary, work, name, extra=()):
        self.port = free_port()
        # A directory of its own: WORK may hold another server's (locked) data.
        work = os.path.join(work, name)
        os.makedirs(work, exist_ok=True)
        self.name = name
        self.args = [binary, "--bind", "127.0.0.1:0", "--schema-registry-bind", "off",
                     "--kafka-bind", f"127.0.0.1:{self.port}",
                     "--data-dir", os.path.join(work, "data"), *extra]
        self.log = open(os.path.join(work, "server.log"), "ab")
        self.proc = None

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=self.log)
        for line in self.proc.stdout:
            if line.startswith(b"kafka listening on"):
                return
        self.log.flush()
        with open(self.log.name, "rb") as log:
            tail = log.read()[-2000:].decode(errors="replace")
        sys.exit(f"  FAIL kafko did not start ({self.name}):\n{tail}")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
