"""Engine lifetime against other threads, re-entrant Python code and interpreter
exit: regressions of a review of the binding.

Each test was a reproduction of a bug (the docstrings say what went wrong).
The ones that crashed the process run a child interpreter. Every loop is
bounded in count and in time; only 127.0.0.1 is used.
"""

import collections
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import hixl
from conftest import child_env, start_server, wait_until

CHILD_TIMEOUT_S = 60


def silent_listener():
    """A TCP listener that never answers: connect() to it blocks until its
    timeout (or until the engine is finalized). Returns (socket, "host:port")."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    return s, f"127.0.0.1:{s.getsockname()[1]}"


def finalize_amid(e, target, listeners, settle_s, before=lambda: None):
    """Starts target(remote) on a daemon thread per listener, lets them run
    settle_s, calls before(), finalizes `e` and joins the threads. Returns
    (when finalize was called, how long it took)."""
    threads = [threading.Thread(target=target, args=(remote,), daemon=True) for _, remote in listeners]
    for t in threads:
        t.start()
    time.sleep(settle_s)
    before()
    fin_start = time.monotonic()
    e.finalize()
    fin_took = time.monotonic() - fin_start
    for t in threads:
        t.join(timeout=20)
    assert not any(t.is_alive() for t in threads)
    return fin_start, fin_took


# For scripts that fork: waits up to 20 s for the forked child, then prints
# `label` and its exit code, or "child hung" (having killed it).
REAP = """
import os as _os, time as _time
def reap(pid, label):
    deadline = _time.monotonic() + 20
    while _time.monotonic() < deadline:
        r, st = _os.waitpid(pid, _os.WNOHANG)
        if r:
            print(label, _os.waitstatus_to_exitcode(st))
            return
        _time.sleep(0.02)
    _os.kill(pid, 9)
    _os.waitpid(pid, 0)
    print("child hung")
"""


def run_child(tmp_path, source):
    """Runs `source` as a script in a child interpreter (the same hixl), with
    REAP's helper defined; returns the CompletedProcess (text output)."""
    script = tmp_path / "child.py"
    script.write_text(REAP + textwrap.dedent(source))
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        env=child_env(),
    )


def test_exit_while_daemon_thread_in_engine_call(tmp_path):
    """A daemon thread whose engine call returns while the interpreter
    finalizes: CPython ends such a thread when it asks for the GIL back, which
    from inside the binding's GIL guard was std::terminate (exit status 134)."""
    proc = run_child(
        tmp_path,
        """
        import os, socket, sys, threading, time, hixl

        silent = socket.socket(); silent.bind(("127.0.0.1", 0)); silent.listen(8)
        remote = f"127.0.0.1:{silent.getsockname()[1]}"
        engine = hixl.Hixl()
        assert engine.initialize("127.0.0.1") == hixl.SUCCESS

        class SlowTeardown:
            # Keeps the main thread busy in module teardown (interpreter
            # finalizing) while the connect below returns.
            def __del__(self, os=os, time=time, sys=sys):
                os.write(1, f"teardown start, finalizing={sys.is_finalizing()}\\n".encode())
                time.sleep(2.0)
                os.write(1, b"teardown end\\n")

        slow = SlowTeardown()
        # target is the bound method itself: no frame of __main__ keeps its dict alive
        threading.Thread(target=engine.connect, args=(remote, 1000), daemon=True).start()
        time.sleep(0.2)
        os.write(1, b"main: exiting\\n")
        """,
    )
    assert proc.returncode == 0, f"exit status {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "main: exiting" in proc.stdout
    assert "teardown end" in proc.stdout, proc.stdout
    assert "terminate called" not in proc.stderr



def test_exit_after_atexit_callbacks_ran_on_another_thread(tmp_path):
    """atexit._run_exitfuncs() run by hand on another thread (some libraries
    do): the binding then took that thread for the one finalizing the
    interpreter, and the main thread, destroying an engine at exit, parked for
    ever."""
    proc = run_child(
        tmp_path,
        """
        import atexit, threading, hixl
        engine = hixl.Hixl()
        assert engine.initialize("127.0.0.1") == hixl.SUCCESS
        t = threading.Thread(target=atexit._run_exitfuncs)
        t.start(); t.join()
        print("exiting", flush=True)
        """,
    )
    assert proc.returncode == 0, f"exit status {proc.returncode}\nstderr:\n{proc.stderr}"
    assert proc.stdout.split() == ["exiting"]

def test_a_forked_child_exits_cleanly_with_its_parents_engine(tmp_path):
    """A child of os.fork() that returned normally ran the engine's shutdown
    at exit (~Hixl), joining engine threads only the parent has: a segfault
    (exit status -11). Now the child lets the engine go untouched; calls in
    it fail, a new engine of its own works, and the parent's is unharmed."""
    proc = run_child(
        tmp_path,
        """
        import os, sys, time, hixl
        server, client = hixl.Hixl(), hixl.Hixl()
        assert server.initialize("127.0.0.1:0") == hixl.SUCCESS
        assert client.initialize("127.0.0.1") == hixl.SUCCESS
        pid = os.fork()
        if pid == 0:
            ok = client.connect("127.0.0.1:1", 500) == hixl.FAILED
            client.finalize()
            ok = ok and client.initialize("127.0.0.1") == hixl.SUCCESS
            client.finalize()
            sys.exit(0 if ok else 3)  # a normal exit: server is torn down at exit
        reap(pid, "child")
        server.finalize()
        client.finalize()
        """,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert "child 0" in proc.stdout, (proc.stdout, proc.stderr[-2000:])


def test_a_forked_childs_finalize_is_not_held_by_its_parents_calls(tmp_path):
    """A parent thread was in a call at os.fork(): the child counted that call
    as its own, and its finalize either waited for it for ever or (the first
    fix) stopped waiting for calls in a fork at all, its own ones included.
    Now the child starts with no call counted: its finalize returns at once,
    and one with a call of its own in progress still ends that call first."""
    proc = run_child(
        tmp_path,
        """
        import os, socket, sys, threading, time, hixl
        silent = socket.socket()  # takes connections, never answers a handshake
        silent.bind(("127.0.0.1", 0)); silent.listen(64)
        remote = "127.0.0.1:%d" % silent.getsockname()[1]
        client = hixl.Hixl()
        assert client.initialize("127.0.0.1") == hixl.SUCCESS
        threading.Thread(target=client.connect, args=(remote, 3000), daemon=True).start()
        time.sleep(0.3)  # the parent's thread is in a call at the fork
        pid = os.fork()
        if pid == 0:
            t0 = time.monotonic()
            client.finalize()  # not held by the parent's call
            took = time.monotonic() - t0
            assert client.initialize("127.0.0.1") == hixl.SUCCESS
            result = []
            t = threading.Thread(target=lambda: result.append(client.connect(remote, 2000)))
            t.start()
            time.sleep(0.3)
            client.finalize()
            t.join(5)
            print("child", took < 1.0, result == [hixl.FAILED], flush=True)
            os._exit(0)
        reap(pid, "exit")
        client.finalize()
        """,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.split() == ["child", "True", "True", "exit", "0"], (proc.stdout, proc.stderr[-2000:])


def test_notify_desc_freed_by_another_thread_while_send_notify_copies_it(tmp_path):
    """send_notify's NotifyDesc was copied out of its Python object only after
    the GIL was released (pybind11's call_guard runs before the by-value
    copy): a thread assigning notify.name meanwhile freed the string being
    copied (a segfault, made certain here by a 256 MiB name). Now it is copied
    with the GIL held; the huge name is then refused (PARAM_INVALID)."""
    proc = run_child(
        tmp_path,
        """
        import threading, time, hixl
        e = hixl.Hixl()
        assert e.initialize("127.0.0.1") == hixl.SUCCESS
        nd = hixl.NotifyDesc(b"n", b"m")
        armed = threading.Event()
        done = threading.Event()

        def mutator():
            while not done.is_set():
                if armed.wait(0.05):
                    time.sleep(0.002)       # the sender is in send_notify now
                    nd.name = b"s" * 100    # frees the 256 MiB string
                    armed.clear()

        t = threading.Thread(target=mutator, daemon=True)
        t.start()
        statuses = set()
        for _ in range(3):
            nd.name = b"x" * (256 << 20)
            armed.set()
            statuses.add(hixl.status_name(e.send_notify("127.0.0.1:1", nd, 100)))
            deadline = time.monotonic() + 5
            while armed.is_set() and time.monotonic() < deadline:
                time.sleep(0.001)
        done.set()
        t.join(5)
        e.finalize()
        print("statuses", sorted(statuses))
        """,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert "statuses ['PARAM_INVALID']" in proc.stdout, proc.stdout


def test_notify_desc_changed_by_another_thread_during_send_notify():
    """send_notify used the NotifyDesc object's own strings with the GIL
    released: another thread assigning notify.name meanwhile got a 5000-byte
    name past the 1024-byte check (the server then closed the stream: FAILED),
    besides racing the string's reassignment. Now the argument is copied
    first: each call sends the short name, or rejects the long one."""
    server, client = hixl.Hixl(), hixl.Hixl()
    try:
        name = start_server(server)
        assert client.initialize("127.0.0.1", {hixl.OPTION_AUTO_CONNECT: "1"}) == hixl.SUCCESS

        short, long_ = "s" * 8, "L" * 5000  # long_ is over the 1024-byte limit
        notify = hixl.NotifyDesc(short, "m")
        stop_at = time.monotonic() + 2.0
        results = collections.Counter()

        def sender():
            for _ in range(3000):  # bounded in count and time
                if time.monotonic() > stop_at:
                    break
                client.disconnect(name, 1000)  # send_notify auto-connects: the slow path
                results[hixl.status_name(client.send_notify(name, notify, 2000))] += 1

        def mutator():
            for _ in range(10_000_000):
                if time.monotonic() > stop_at:
                    break
                notify.name = long_
                notify.name = short

        threads = [threading.Thread(target=sender), threading.Thread(target=mutator)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not any(t.is_alive() for t in threads)

        assert results["SUCCESS"] > 0, dict(results)
        assert set(results) <= {"SUCCESS", "PARAM_INVALID"}, dict(results)

        received = []

        def all_received():
            ret, notes = server.get_notifies()
            assert ret == hixl.SUCCESS, hixl.status_name(ret)
            received.extend(notes)
            return len(received) >= results["SUCCESS"]

        wait_until(all_received, timeout_s=10)
        assert len(received) == results["SUCCESS"], (len(received), dict(results))
        assert all(n.name_bytes == short.encode() for n in received), {len(n.name_bytes) for n in received}
    finally:
        client.finalize()
        server.finalize()


def test_del_that_deregisters_again(tmp_path):
    """deregister_mem released the held buffer inside std::map::erase; its
    __del__ calling deregister_mem on the same handle again erased the node
    being destroyed: a double free (exit status 134)."""
    proc = run_child(
        tmp_path,
        """
        import hixl

        e = hixl.Hixl()
        assert e.initialize("127.0.0.1") == hixl.SUCCESS

        class SelfCleaningBuf(bytearray):
            handle = None
            def __del__(self):
                if self.handle is not None:  # an idempotent cleanup
                    ret = e.deregister_mem(self.handle)
                    print("__del__: deregister_mem again ->", hixl.status_name(ret), flush=True)

        x = SelfCleaningBuf(4096)
        ret, x.handle = e.register_buffer(x)
        assert ret == hixl.SUCCESS
        h = x.handle
        del x  # only the binding holds x now
        print("deregister_mem ->", hixl.status_name(e.deregister_mem(h)), flush=True)
        e.finalize()
        print("survived", flush=True)
        """,
    )
    assert proc.returncode == 0, f"exit status {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.stdout.splitlines() == [
        "__del__: deregister_mem again -> SUCCESS",
        "deregister_mem -> SUCCESS",
        "survived",
    ], proc.stdout


def test_register_in_del_during_deregister_keeps_its_hold(engine):
    """A buffer released by deregister_mem whose __del__ registers another
    buffer: that registration was inserted into the map being erased and its
    hold lost, so deregister_mem of it never released the export (the
    bytearray stayed unresizable, even after finalize)."""
    assert engine.initialize("127.0.0.1") == hixl.SUCCESS
    y = bytearray(4096)
    handles = {}

    class Buf(bytearray):
        def __del__(self):
            # e.g. a pool that registers a replacement when a buffer is dropped
            handles["y"] = engine.register_buffer(y)

    x = Buf(4096)
    ret, hx = engine.register_buffer(x)
    assert ret == hixl.SUCCESS
    refs_before = sys.getrefcount(y)
    del x  # only the binding holds x now
    assert engine.deregister_mem(hx) == hixl.SUCCESS  # releases x: __del__ registers y
    ret, hy = handles.pop("y")
    assert ret == hixl.SUCCESS, hixl.status_name(ret)
    with pytest.raises(BufferError):
        y.extend(b"x")  # held while registered
    assert engine.deregister_mem(hy) == hixl.SUCCESS
    try:
        y.extend(b"x")  # released: resizable again
    except BufferError as err:
        pytest.fail(f"still exported after deregister_mem: {err}")
    assert len(y) == 4097
    assert sys.getrefcount(y) == refs_before  # and no reference kept


def test_register_buffer_racing_finalize_keeps_nothing():
    """register_buffer stores its hold after the engine call, GIL retaken; a
    finalize() from another thread that got the GIL in between (and released
    the held buffers) was followed by the store: the buffer stayed exported
    after finalize.

    Probabilistic: the race needs finalize to get the GIL between the two
    steps. Two registrars, a CPU-bound thread and a 1 ms switch interval make
    that frequent: against the binding before the fix, a buffer stayed
    exported within the first 10 cycles in each of 16 runs (of the ~200
    cycles that fit in the 3 s here), so this catches the bug nearly always;
    but a run that never hits the window passes."""
    cycles = registered = 0
    done = threading.Event()

    def hog():  # keeps the GIL contended
        x = 0
        while not done.is_set() and x < 10**9:
            x += 1

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    hog_thread = threading.Thread(target=hog, daemon=True)
    hog_thread.start()
    try:
        stop_at = time.monotonic() + 3.0
        while cycles < 300 and time.monotonic() < stop_at:
            cycles += 1
            e = hixl.Hixl()
            assert e.initialize("127.0.0.1") == hixl.SUCCESS
            bufs = []
            started = threading.Barrier(3, timeout=10)

            def registrar(e=e, bufs=bufs, started=started):
                started.wait()
                for _ in range(2000):  # bounded; ends when finalize fails the call
                    b = bytearray(64)
                    ret, _ = e.register_buffer(b)
                    if ret != hixl.SUCCESS:
                        break
                    bufs.append(b)

            threads = [threading.Thread(target=registrar) for _ in range(2)]
            for t in threads:
                t.start()
            started.wait()
            time.sleep(0.002)
            e.finalize()
            for t in threads:
                t.join(timeout=10)
            assert not any(t.is_alive() for t in threads)
            registered += len(bufs)
            stuck = 0
            for b in bufs:
                try:
                    b.extend(b"x")
                except BufferError:
                    stuck += 1
            del e
            assert stuck == 0, f"cycle {cycles}: {stuck} buffer(s) still exported after finalize()"
    finally:
        done.set()
        hog_thread.join(timeout=10)
        sys.setswitchinterval(old_interval)
    assert registered > 0  # the registrars did run


def test_finalize_not_starved_by_new_calls():
    """finalize() while 3 threads keep calling connect() (1 s each, to
    listeners that never answer): finalize let every new call in ahead of it
    and returned only when the callers gave up (5.5 s in the review). Now calls
    made once finalize was called return FAILED at once, the ones in flight end
    early, and finalize returns promptly."""
    e = hixl.Hixl()
    listeners = [silent_listener() for _ in range(3)]
    try:
        assert e.initialize("127.0.0.1") == hixl.SUCCESS
        calls = []  # (start, end, status), from every worker
        lock = threading.Lock()
        stop_at = time.monotonic() + 4.0

        def worker(remote):
            failed = 0
            for _ in range(100):  # bounded in count and time
                if time.monotonic() > stop_at:
                    break
                start = time.monotonic()
                ret = e.connect(remote, 1000)
                with lock:
                    calls.append((start, time.monotonic(), ret))
                if ret == hixl.FAILED:  # finalized: a few more calls, spaced, then stop
                    failed += 1
                    if failed == 3:
                        break
                    time.sleep(0.1)

        fin_start, fin_took = finalize_amid(e, worker, listeners, settle_s=0.5)
    finally:
        e.finalize()
        for s, _ in listeners:
            s.close()

    assert fin_took < 1.5, f"finalize took {fin_took:.2f} s"
    # Calls begun after finalize was called (a margin past it, as a call could
    # be starting just then): FAILED, without waiting for anything.
    late = [(end - start, ret) for start, end, ret in calls if start > fin_start + 0.05]
    assert late, "no call was made after finalize"
    bad = [(round(took, 2), hixl.status_name(ret)) for took, ret in late if ret != hixl.FAILED or took > 0.5]
    assert not bad, f"calls made after finalize() was called (seconds, status): {bad}"


def test_finalize_ends_calls_in_flight():
    """finalize() while other threads are blocked in connect(timeout 8 s) to
    listeners that never answer: finalize waited for the connects to time out
    on their own (7.7 s), although the C++ Finalize ends them. Now it ends
    them and returns promptly."""
    e = hixl.Hixl()
    listeners = [silent_listener() for _ in range(2)]
    results = {}
    try:
        assert e.initialize("127.0.0.1") == hixl.SUCCESS

        def blocked(remote):
            start = time.monotonic()
            ret = e.connect(remote, 8000)
            results[remote] = (ret, time.monotonic() - start)

        _, fin_took = finalize_amid(e, blocked, listeners, settle_s=0.3,
                                    before=lambda: not results or pytest.fail("a connect returned early"))
    finally:
        e.finalize()
        for s, _ in listeners:
            s.close()

    assert fin_took < 1.5, f"finalize took {fin_took:.2f} s"
    for remote, (ret, took) in results.items():
        assert ret != hixl.SUCCESS, remote
        assert took < 3.0, f"connect to {remote} returned {hixl.status_name(ret)} after {took:.2f} s"


def test_eq_with_other_types():
    """__eq__ took only its own type: comparing with anything else raised
    TypeError (`desc == None`, `desc in [None, desc]`)."""
    mem = hixl.MemDesc(1, 2)
    op = hixl.TransferOpDesc(1, 2, 3)
    note = hixl.NotifyDesc("a", "b")
    for desc in (mem, op, note):
        assert (desc == None) is False  # noqa: E711 - the comparison is the test
        assert (desc != None) is True  # noqa: E711
        assert (desc == 0) is False
        assert desc != "a"
        assert desc != object()
        assert desc in [None, 0, desc]
        assert None not in [desc]
    assert mem in [None, hixl.MemDesc(1, 2)]
    assert op in ["x", hixl.TransferOpDesc(1, 2, 3)]
    assert note in [1, hixl.NotifyDesc("a", "b")]
    assert mem != hixl.MemDesc(1, 3)
    assert op != hixl.TransferOpDesc(1, 2, 4)
    assert note != hixl.NotifyDesc("a", "c")


def test_register_buffer_just_before_a_slow_finalize_holds_until_it_ends(engine, peer):
    """register_buffer succeeding just as a finalize begins, the finalize then
    waiting for a frozen same-host peer to acknowledge the revocation of our
    regions: the binding dropped the buffer at once, while the engine still
    served the region (a peer's WRITE landed in freed memory). The buffer
    must stay held until the finalize has stopped the engine."""
    held_while_running = released_after = 0
    for _ in range(20):
        e = hixl.Hixl()
        name = start_server(e)
        try:
            first = bytearray(4096)  # a region to revoke: what the finalize waits on
            assert e.register_buffer(first)[0] == hixl.SUCCESS
            assert peer.call("connect", remote=name)["status"] == hixl.SUCCESS  # same host: shm
            peer.stop()
            ba = bytearray(4096)
            state = {}

            def fin():
                while not state.get("go"):
                    time.sleep(0)  # runs once register_buffer lets go of the GIL
                e.finalize()
                state["done"] = True

            t = threading.Thread(target=fin)
            t.start()
            time.sleep(0.01)
            state["go"] = True
            ret, _ = e.register_buffer(ba)
            if ret == hixl.SUCCESS and not state.get("done"):
                with pytest.raises(BufferError):
                    ba.append(0)  # still exported: the engine may still write into it
                held_while_running += 1
            peer.cont()
            t.join(timeout=20)
            assert not t.is_alive()
            ba.append(0)  # the finalize has ended: released
            released_after += 1
        finally:
            peer.cont()
            e.finalize()
        if held_while_running >= 3:
            break
    assert held_while_running > 0, "the race window was never hit"
    assert released_after > 0


@pytest.mark.parametrize("atexit_on_helper", [False, True])
def test_interpreter_finalized_on_another_thread(tmp_path, atexit_on_helper):
    """An application embedding Python on a thread other than its first:
    an engine destroyed in Py_FinalizeEx hung the process (the binding took
    the first thread, then the one that ran the atexit callbacks, which may
    have been run by hand on a helper, for the one finalizing the
    interpreter, and parked the real one)."""
    import sysconfig

    helper = ("import atexit, threading\\n"
              "t = threading.Thread(target=atexit._run_exitfuncs); t.start(); t.join()\\n"
              if atexit_on_helper else "")
    src = tmp_path / "embed.c"
    src.write_text(textwrap.dedent(r"""
        #include <Python.h>
        #include <pthread.h>
        #include <stdio.h>
        #define HELPER "@HELPER@"
        static void *run(void *arg) {
          (void)arg;
          Py_Initialize();
          PyRun_SimpleString("import hixl\n"
                             "engine = hixl.Hixl()\n"
                             "print(hixl.status_name(engine.initialize('127.0.0.1')), flush=True)\n"
                             HELPER);
          printf("finalize %d\n", Py_FinalizeEx());
          fflush(stdout);
          return NULL;
        }
        int main(void) {
          pthread_t t;
          pthread_create(&t, NULL, run, NULL);
          pthread_join(t, NULL);
          return 0;
        }
    """).replace("@HELPER@", helper))
    exe = tmp_path / "embed"
    ver = sysconfig.get_config_var("LDVERSION")
    build = subprocess.run(
        ["cc", str(src), "-o", str(exe), "-I" + sysconfig.get_config_var("INCLUDEPY"),
         "-L" + sysconfig.get_config_var("LIBDIR"), "-lpython" + ver, "-lpthread"],
        capture_output=True, text=True, timeout=120)
    if build.returncode != 0:
        pytest.skip("cannot build an embedding program here: " + build.stderr[-300:])
    try:
        r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=20, env=child_env())
    except subprocess.TimeoutExpired:
        pytest.fail("Py_FinalizeEx on a second thread hung")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["SUCCESS", "finalize", "0"], r.stdout
