# examples/python/quickstart.py: two engines, one NumPy array each way.
import socket

import numpy as np

import hixl


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A server engine (it has a port) and a client engine (no port). In real use
# they live in different processes or hosts; here both are in one process.
server_name = f"127.0.0.1:{free_port()}"
server, client = hixl.Hixl(), hixl.Hixl()
assert server.initialize(server_name) == hixl.SUCCESS
assert client.initialize("127.0.0.1") == hixl.SUCCESS

# Memory the server exposes, and the client's own memory. register_buffer keeps
# each array alive (and in place) until deregister_mem.
remote = np.zeros(1 << 20, dtype=np.float32)
local = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
back = np.empty_like(local)
ret, server_handle = server.register_buffer(remote)
assert ret == hixl.SUCCESS
for arr in (local, back):
    assert client.register_buffer(arr)[0] == hixl.SUCCESS

# The client connects, then moves data without the server doing anything.
assert client.connect(server_name, timeout_in_millis=5000) == hixl.SUCCESS
remote_addr, _ = hixl.buffer_address(remote)  # normally sent by the server out of band

ops = [hixl.transfer_op_desc(local, remote_addr)]  # all of `local` to remote_addr
ret = client.transfer_sync(server_name, hixl.WRITE, ops, timeout_in_millis=10000)
assert ret == hixl.SUCCESS, hixl.status_name(ret)
assert np.array_equal(remote, local)

ops = [hixl.transfer_op_desc(back, remote_addr)]
ret = client.transfer_sync(server_name, hixl.READ, ops, timeout_in_millis=10000)
assert ret == hixl.SUCCESS, hixl.status_name(ret)
assert np.array_equal(back, local)

# Tell the server, which collects its notifies when it likes.
assert client.send_notify(server_name, hixl.NotifyDesc("done", "4 MiB each way")) == hixl.SUCCESS
ret, notifies = server.get_notifies()
print([(n.name, n.notify_msg) for n in notifies])  # [("done", "4 MiB each way")]

assert client.disconnect(server_name) == hixl.SUCCESS
assert server.deregister_mem(server_handle) == hixl.SUCCESS
client.finalize()
server.finalize()
print("quickstart OK")
