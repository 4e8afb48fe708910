"""The HTTP service, for a few seconds: create an API key, start `quotebound serve` on a free
loopback port, ask a question over server-sent events, open the cited source exactly as it was
sent, show that an id that was not sent is a 404, then stop the server.

Usage: python examples/service_demo.py STORE_URL   (the demo's store, already ingested)
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from quotebound.store import open_store


def main(store_url: str) -> int:
    with open_store(store_url) as store:
        key, secret = store.create_key(name="demo")
    print(f"created API key {key.id} (reads public documents); the secret is shown once")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    qb = str(Path(sys.executable).with_name("quotebound"))
    server = subprocess.Popen(
        [qb, "serve", "--provider", "extractive", "--port", str(port), "--store", store_url],
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        else:
            print("the server did not start within 30 s", file=sys.stderr)
            return 1
        print(f"quotebound serve --provider extractive: listening on {base}/ (the web page)")
        headers = {"Authorization": f"Bearer {secret}"}
        question = "How soon must receipts be uploaded?"
        print(f'\nPOST /v1/ask {{"question": "{question}", "stream": true}}')
        answer = None
        with httpx.stream(
            "POST",
            f"{base}/v1/ask",
            headers=headers,
            timeout=60,
            json={"question": question, "stream": True},
        ) as r:
            event = ""
            for line in r.iter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    data = json.loads(line[6:])
                    if event == "progress":
                        print(f"  progress: {data['stage']}")
                    elif event == "claim":
                        print(f"  claim (verified): {data['text']} {data['cards'][0]['number']}")
                    elif event == "answer":
                        answer = data
        if answer is None or not answer["claims"]:
            print("  no claim was verified: the demo expected one", file=sys.stderr)
            return 1
        cite = answer["claims"][0]["cites"][0]
        tid, sid = answer["trace_id"], cite["source"]
        view = httpx.get(f"{base}/v1/traces/{tid}/sources/{sid}", headers=headers).json()
        start, end = cite["span"]
        text = view["source"]["text"]
        print(f"\nGET /v1/traces/{tid}/sources/{sid}: the text as sent, quote marked")
        marked = text[:start] + ">>>" + text[start:end] + "<<<" + text[end:]
        print("  " + marked.replace("\n", "\n  "))
        print(f"  link to the original: {view['link']}")
        missing = httpx.get(f"{base}/v1/traces/{tid}/sources/S99", headers=headers)
        print(
            f"\nGET /v1/traces/{tid}/sources/S99 -> {missing.status_code} "
            f"{missing.json()['error']['message']}"
        )
        anonymous = httpx.get(f"{base}/v1/traces/{tid}")
        print(f"GET /v1/traces/{tid} without a key -> {anonymous.status_code}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
