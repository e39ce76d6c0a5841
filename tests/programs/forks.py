"""python3 forks: os.fork in a child of os.fork, subprocess from a forked
child, and multiprocessing with the fork and forkserver start methods (a
fork-started Process that itself runs a fork Pool).  Prints a fixed text."""
import multiprocessing as mp
import os
import subprocess
import sys


def square(x):
    return x * x


def nested_pool(q):
    with mp.get_context("fork").Pool(2) as pool:
        q.put(sum(pool.map(square, range(10))))


def main():
    pid = os.fork()
    if pid == 0:
        pid2 = os.fork()
        if pid2 == 0:
            out = subprocess.run(["sh", "-c", "echo $(echo grandchild)"],
                                 capture_output=True, text=True).stdout
            os.write(1, out.encode())
            os._exit(5)
        _, st = os.waitpid(pid2, 0)
        os.write(1, ("child saw %d\n" % os.waitstatus_to_exitcode(st)).encode())
        os._exit(6)
    _, st = os.waitpid(pid, 0)
    print("parent saw", os.waitstatus_to_exitcode(st), flush=True)
    for method in ("fork", "forkserver"):
        ctx = mp.get_context(method)
        with ctx.Pool(3) as pool:
            print(method, "pool", pool.map(square, range(8)), flush=True)
        p = ctx.Process(target=square, args=(3,))
        p.start()
        p.join()
        print(method, "process exit", p.exitcode, flush=True)
    q = mp.get_context("fork").Queue()
    p = mp.get_context("fork").Process(target=nested_pool, args=(q,))
    p.start()
    print("pool in a forked process", q.get(timeout=60), flush=True)
    p.join()
    print("done", p.exitcode, flush=True)
    sys.exit(3)


if __name__ == "__main__":
    main()
