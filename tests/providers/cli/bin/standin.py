#!/usr/bin/env python3
"""A stand-in command-line agent with scripted behaviour, for the CLIAgent tests.

Usage: standin.py MODE [ARGS...]
  echo                 copy stdin to stdout
  silent SECONDS       print nothing, sleep
  trickle SECONDS DT   print "." every DT seconds for SECONDS, then "done"
  spawn PIDFILE        start a grandchild, write "leader grandchild" pids, sleep silently
  background PIDFILE   start a detached-output grandchild, write its pid, exit 0 at once
  ignore-term PIDFILE  ignore SIGTERM, write the pid, sleep silently
  flood NBYTES         write NBYTES to stdout, then exit 0
  fail RC MESSAGE      read stdin, write MESSAGE to stderr, exit RC
  env NAME...          print {NAME: value-or-null} as JSON
  no-stdin             exit 0 without reading stdin, printing "ok"
"""

import json
import os
import signal
import subprocess
import sys
import time


def _sleeper() -> "subprocess.Popen[bytes]":
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )


def _write(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def main() -> int:
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "echo":
        sys.stdout.write(sys.stdin.read())
        return 0
    if mode == "silent":
        time.sleep(float(args[0]))
        return 0
    if mode == "trickle":
        end = time.monotonic() + float(args[0])
        while time.monotonic() < end:
            print(".", end="", flush=True)
            time.sleep(float(args[1]))
        print("done")
        return 0
    if mode == "spawn":
        child = _sleeper()
        _write(args[0], f"{os.getpid()} {child.pid}")
        time.sleep(300)
        return 0
    if mode == "background":
        child = _sleeper()
        _write(args[0], str(child.pid))
        print("ok")
        return 0
    if mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _write(args[0], str(os.getpid()))
        time.sleep(300)
        return 0
    if mode == "flood":
        left = int(args[0])
        block = b"x" * 65536
        while left > 0:
            n = min(left, len(block))
            sys.stdout.buffer.write(block[:n])
            left -= n
        sys.stdout.flush()
        return 0
    if mode == "fail":
        sys.stdin.read()
        sys.stderr.write(args[1] + "\n")
        return int(args[0])
    if mode == "env":
        print(json.dumps({name: os.environ.get(name) for name in args}))
        return 0
    if mode == "no-stdin":
        print("ok")
        return 0
    sys.stderr.write(f"standin: unknown mode {mode!r}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
