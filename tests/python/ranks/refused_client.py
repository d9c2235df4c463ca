"""A client whose hello the monitor refuses, for test_python_client: it logs until it sees the
connection closed, then says whether it trained on. With VERSIONS=LO..HI it is a client of those
wire versions (a Client made by hand; the module's own stays outside ddpdesk, without
DDPDESK_MONITOR). Reads TEST_MONITOR and TEST_TOKEN."""

import os
import time

from ddpdesk import _client, _env

env = {"DDPDESK_MONITOR": os.environ["TEST_MONITOR"], "DDPDESK_TOKEN": os.environ["TEST_TOKEN"],
       "RANK": "0", "WORLD_SIZE": "1"}
versions = None
if "VERSIONS" in os.environ:
    versions = tuple(int(v) for v in os.environ["VERSIONS"].split(".."))
c = _client.Client(_env.read(env), versions=versions)
deadline = time.monotonic() + 60
n = 0
while time.monotonic() < deadline and not (c._connect_tried and not c.connected):
    n += 1
    c.log(n, 0.5, n, None, None, {})
    time.sleep(0.01)
c.close()
print("trained on" if not c.connected else "still connected", flush=True)
