#!/usr/bin/env python3
"""Start-up cost of kvfit against `cat` (issue 15, item 4): medians of N rounds, each running kvfit and cat once
  1. `kvfit --version`                       vs `cat` of a small file (README.md),
  2. a whole plan of the 6.4 MB Qwen3.5-9B GGUF header (`kvfit FILE --gpu 24GiB --json`) vs `cat` of that file,
each child started with posix_spawn and reaped with waitpid, stdout to /dev/null, so both sides pay the same
process start. Also lists the shared libraries kvfit maps (ldd), which must not include libcurl or a TLS library:
libcurl is dlopen'ed at the first hf: request (src/sources/curl_api.cpp) and the HTTP server is the kvfit-serve
helper. Targets (issue 28, item 3): both ratios <= 1.2x (issue 15 asked 3x and 2x).
Usage: bench/startup.py KVFIT_BINARY [GGUF] [--runs N | --runs=N]"""
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_once(argv, actions):
    """(wall, cpu) ms of one run: wall from spawn to reap; cpu = the child's user + system time (wait4), which does
    not grow when other processes share the cores (on a loaded machine wall time mostly measures waiting)."""
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
    _, status, ru = os.wait4(pid, 0)
    wall = (time.perf_counter() - t0) * 1e3
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 3):
        sys.exit("bench: %s exited %d" % (" ".join(argv), code))
    return wall, (ru.ru_utime + ru.ru_stime) * 1e3


def paired_ms(argv, other, runs):
    """Medians of `argv` and `other`, run alternately (one of each per round), and the median of the per-round
    ratios: a shared machine's speed drifts from one second to the next (the VM's neighbours, frequency), and
    alternating puts both commands under the same conditions. The first 3 rounds warm the page cache."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    actions = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
    a, b = [], []
    for _ in range(runs + 3):
        a.append(run_once(argv, actions))
        b.append(run_once(other, actions))
    os.close(devnull)
    a, b = a[3:], b[3:]
    med = lambda xs: statistics.median(xs)
    ratio_wall = med([x[0] / y[0] for x, y in zip(a, b)])
    ratio_cpu = med([x[1] / max(y[1], 1e-3) for x, y in zip(a, b)])
    return (med([x[0] for x in a]), med([x[1] for x in a])), (med([y[0] for y in b]), med([y[1] for y in b])), \
        (ratio_wall, ratio_cpu)


def main():
    args, runs = [], 200
    argv = sys.argv[1:]
    i = 0
    while i < len(argv):  # --runs N or --runs=N
        a = argv[i]
        if a == "--runs" and i + 1 < len(argv):
            runs, i = int(argv[i + 1]), i + 2
            continue
        if a.startswith("--runs="):
            runs = int(a.split("=", 1)[1])
        else:
            args.append(a)
        i += 1
    if not args:
        sys.exit(__doc__)
    kvfit = os.path.abspath(args[0])
    gguf = args[1] if len(args) > 1 else os.path.join(ROOT, "..", "shared", "reference", "llamacpp", "gguf",
                                                       "qwen35-9b_v248320.gguf")
    cat = "/bin/cat"
    small = os.path.join(ROOT, "README.md")
    libs = [l.split()[0] for l in subprocess.run(["ldd", kvfit], capture_output=True, text=True).stdout.splitlines()]
    bad = [l for l in libs if any(k in l for k in ("curl", "ssl", "crypto", "gnutls", "httplib", "brotli"))]
    version_argv = [kvfit, os.environ.get("KVFIT_BENCH_VERSION_ARG", "--version")]
    version, cat_small, ratio_small = paired_ms(version_argv, [cat, small], runs)
    plan, cat_big, ratio_big = paired_ms([kvfit, gguf, "--gpu", "24GiB", "--json"], [cat, gguf], max(20, runs // 2))
    print("kvfit maps %d shared libraries (ldd): %s" % (len(libs), " ".join(os.path.basename(l) for l in libs)))
    print("  HTTP/TLS libraries among them: %s" % (", ".join(bad) if bad else "none"))
    def row(label, a, other, b, ratio, target):
        print("%-26s wall %7.2f ms  cpu %6.2f ms | cat %-30s wall %7.2f ms  cpu %6.2f ms | ratio wall %5.2fx  cpu %5.2fx"
              " (median of paired runs; target <= %.1fx)" % (label, a[0], a[1], other, b[0], b[1], ratio[0], ratio[1], target))
    print("load average %.2f on %d cores (wall time includes waiting for a core)" % (os.getloadavg()[0], os.cpu_count()))
    row("kvfit --version", version, os.path.basename(small), cat_small, ratio_small, 1.2)
    row("kvfit plan of the header", plan, os.path.basename(gguf) + " (%.1f MB)" % (os.path.getsize(gguf) / 1e6), cat_big,
        ratio_big, 1.2)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
