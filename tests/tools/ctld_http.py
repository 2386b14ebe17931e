#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Requests to loom-ctld for test_loom_ctld.sh: prints "STATUS BODY" (the body on one line)
for each request, so the script can check the status and grep the JSON.

  ctld_http.py ADDR METHOD PATH [--token T | --token-file F] [--body TEXT | --body-bytes N]
               [--repeat N [--interval S]]
  ctld_http.py ADDR DOWN_AFTER ID LEASE NAME --token-file F
                                   one heartbeat of member ID, then the member list every 20 ms
                                   until NAME is down: prints the milliseconds from the
                                   heartbeat's answer to the list that shows it down (or
                                   "never" after 5 s); timed in one process, so the figure is
                                   the controller's and not this script's start-up
  ctld_http.py ADDR EXPIRED_AFTER ID LEASE --token-file F
                                   one renewal of allocation ID, then the allocation list every
                                   20 ms until ID is gone: prints the milliseconds from the
                                   renewal's answer to the list without it (or "never" after
                                   5 s); timed in one process, as DOWN_AFTER
  ctld_http.py ADDR RAW TEXT       sends TEXT as it is (a malformed request), prints the status
  ctld_http.py ADDR GARBAGE N       sends N malformed requests (random bytes, bad request lines,
                                   lengths and chunks, oversized headers), prints how many got
                                   an HTTP answer
  ctld_http.py ADDR HANG SECONDS   listens on ADDR, accepts nothing, for SECONDS (a controller
                                   that never answers)
Every wait is bounded (5 s); a failure to connect prints "000 <reason>".
"""
import argparse
import http.client
import json
import random
import socket
import sys
import time


def split(addr):
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


def one(host, port, method, path, headers, body):
    conn = http.client.HTTPConnection(host, port, timeout=5)
    try:
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        text = r.read().decode("utf-8", "replace").replace("\n", " ").strip()
        return f"{r.status} {text}"
    except (OSError, http.client.HTTPException) as e:
        return f"000 {e}"
    finally:
        conn.close()


def raw(host, port, text):
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(text.encode().decode("unicode_escape").encode("latin-1"))
        data = b""
        try:
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
    line = data.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    return parts[1] if len(parts) > 1 else "000"


def garbage(host, port, count):
    rng = random.Random(15)
    shapes = [
        lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))),
        lambda: b"GET /v1/status HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
        lambda: b"POST /v1/members HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n{",
        lambda: b"POST /v1/members HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        lambda: b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n",
        lambda: b"GET /v1/status HTTP/1.1\r\nX: " + b"b" * 20000 + b"\r\n\r\n",
        lambda: b"GET /v1/members/99999999999999999999999/heartbeat HTTP/1.1\r\n\r\n",
        lambda: b"\r\n\r\n\r\n",
    ]
    answered = 0
    for i in range(count):
        try:
            with socket.create_connection((host, port), timeout=5) as s:
                s.sendall(shapes[i % len(shapes)]())
                s.shutdown(socket.SHUT_WR)
                if s.recv(16).startswith(b"HTTP/1.1 "):
                    answered += 1
        except OSError:
            pass
    print(answered)


def hang(host, port, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    s.listen(16)
    print(f"{host}:{s.getsockname()[1]}", flush=True)
    time.sleep(seconds)


def renewed_then_gone(host, port, headers, renew_path, lease, what, list_path, gone):
    """Renews once, then prints the milliseconds until gone(the list's JSON) holds ("never"
    after 5 s): how long a lease outlives its last renewal."""
    answer = one(host, port, "POST", renew_path, headers, json.dumps({"lease": lease}))
    start = time.monotonic()
    if not answer.startswith("200 "):
        print(f"{what} refused: {answer}")
        return
    while time.monotonic() - start < 5:
        listed = one(host, port, "GET", list_path, headers, None)
        if listed.startswith("200 ") and gone(json.loads(listed[4:])):
            print(round((time.monotonic() - start) * 1000))
            return
        time.sleep(0.02)
    print("never")


def down_after(host, port, member_id, lease, name, headers):
    renewed_then_gone(host, port, headers, f"/v1/members/{member_id}/heartbeat", lease,
                      "heartbeat", "/v1/members",
                      lambda d: any(m["name"] == name and m["state"] == "down"
                                    for m in d["members"]))


def expired_after(host, port, alloc_id, lease, headers):
    renewed_then_gone(host, port, headers, f"/v1/allocations/{alloc_id}/renew", lease,
                      "renewal", "/v1/allocations",
                      lambda d: not any(a["id"] == int(alloc_id) for a in d["allocations"]))


def main():
    addr, method = sys.argv[1], sys.argv[2]
    host, port = split(addr)
    if method == "RAW":
        print(raw(host, port, sys.argv[3]))
        return
    if method == "GARBAGE":
        garbage(host, port, int(sys.argv[3]))
        return
    if method == "HANG":
        hang(host, port, float(sys.argv[3]))
        return
    p = argparse.ArgumentParser()
    p.add_argument("path")
    p.add_argument("--token")
    p.add_argument("--token-file")
    p.add_argument("--body")
    p.add_argument("--body-bytes", type=int)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--interval", type=float, default=0)
    if method == "DOWN_AFTER":
        p.add_argument("lease")
        p.add_argument("name")
    if method == "EXPIRED_AFTER":
        p.add_argument("lease")
    a = p.parse_args(sys.argv[3:])
    headers = {}
    token = a.token
    if a.token_file:
        with open(a.token_file) as f:
            token = f.read().strip()
    if token:
        headers["Authorization"] = "Bearer " + token
    body = a.body
    if a.body_bytes:
        body = '{"name": "' + "x" * a.body_bytes + '"}'
    if body is not None:
        headers["Content-Type"] = "application/json"
    if method == "DOWN_AFTER":
        down_after(host, port, a.path, a.lease, a.name, headers)
        return
    if method == "EXPIRED_AFTER":
        expired_after(host, port, a.path, a.lease, headers)
        return
    for i in range(a.repeat):
        if i > 0 and a.interval > 0:
            time.sleep(a.interval)
        print(one(host, port, method, a.path, headers, body), flush=True)


if __name__ == "__main__":
    main()
