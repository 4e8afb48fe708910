"""``make chat-ui-check``: Open WebUI itself, offline, asking ``quotebound serve`` a question.

Not part of ``make test`` (it installs Open WebUI, about 3 GB, in a venv of its own:
``.chat-ui/venv``). What it does, every step checked (facts: ../shared/notes/open-webui-offline.md):

1. a throwaway home: the example handbook ingested as the corpus ``handbook``, an API key;
2. ``quotebound serve`` on a loopback port (``--provider``: the embedded local model by default,
   ``extractive`` for a quick run), waited for until ``/readyz`` says ready;
3. Open WebUI 0.12.4 started offline against it (``OPENAI_API_BASE_URL``, the key), every
   connection it makes to 127.0.0.1, a fresh data folder;
4. a chat stored through Open WebUI's own API, as its page sends one (``stream``, a message id,
   a session), with the question; polled until the answer is done;
5. asserted: the stored answer is quotebound's (a ``[n]`` marker linking to a signed
   ``/shared/...`` page of the cited source) and Open WebUI kept its sources (the verified
   quotes); one marker link opened without a key shows the quote marked;
6. headless Chromium opens the chat and saves ``docs/img/chat-ui.png``.

    make chat-ui-check                       # or: .venv/bin/python scripts/chat_ui_check.py
    .venv/bin/python scripts/chat_ui_check.py --provider extractive --out /tmp/shot.png
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".chat-ui" / "venv"
OPEN_WEBUI = "open-webui==0.12.4"
QUESTION = "How many weeks of paid parental leave do employees get?"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def install() -> Path:
    """Open WebUI in its own venv (its pins are not the project's); torch the CPU build first,
    as the project's own set-up installs it, so that sentence-transformers finds it."""
    stamp = VENV / ".installed"
    if not stamp.exists():
        python = shutil.which("python3.11") or sys.executable
        print(f"installing {OPEN_WEBUI} in {VENV} (a few minutes, once)", flush=True)
        subprocess.run([python, "-m", "venv", str(VENV)], check=True)
        pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, "--upgrade", "pip"], check=True)
        subprocess.run([*pip, "torch==2.13.0"], check=True)
        subprocess.run([*pip, OPEN_WEBUI], check=True)
        stamp.touch()
    return VENV / "bin" / "open-webui"


@contextmanager
def started(cmd: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def wait_for(url: str, proc: subprocess.Popen[bytes], log: Path, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(
                f"{proc.args[0]} exited ({proc.returncode}); its log:\n"
                + log.read_text(errors="replace")[-3000:]
            )
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise SystemExit(f"{url} not ready after {seconds:.0f} s; log: {log}")


def ask_through_open_webui(base: str, model: str, seconds: float) -> tuple[str, dict[str, Any]]:
    """A chat stored by Open WebUI, as its page makes one; the chat id and the answer."""
    token = httpx.post(f"{base}/api/v1/auths/signin", json={"email": "", "password": ""}).json()
    headers = {"Authorization": f"Bearer {token['token']}"}
    with httpx.Client(base_url=base, headers=headers, timeout=seconds) as client:
        client.post("/api/v1/users/user/settings/update", json={"ui": {"version": "0.12.4"}})
        models = [m["id"] for m in client.get("/api/models").json()["data"]]
        if model not in models:
            raise SystemExit(f"Open WebUI does not list {model}: {models}")
        chat = client.post(
            "/api/v1/chats/new",
            json={"chat": {"title": "Parental leave", "models": [model], "messages": []}},
        ).json()
        user, reply = str(uuid.uuid4()), str(uuid.uuid4())
        user_message = {
            "id": user,
            "role": "user",
            "content": QUESTION,
            "parentId": None,
            "childrenIds": [reply],
            "timestamp": int(time.time()),
        }
        history = {
            "messages": {
                user: user_message,
                reply: {
                    "id": reply,
                    "parentId": user,
                    "childrenIds": [],
                    "role": "assistant",
                    "content": "",
                    "model": model,
                    "timestamp": int(time.time()),
                },
            },
            "currentId": reply,
        }
        client.post(
            f"/api/v1/chats/{chat['id']}",
            json={"chat": {"models": [model], "history": history, "messages": []}},
        )
        started = client.post(
            "/api/chat/completions",
            json={
                "model": model,
                "stream": True,
                "messages": [{"role": "user", "content": QUESTION}],
                "chat_id": chat["id"],
                "id": reply,
                "parent_id": user,
                "session_id": "chat-ui-check",
                "user_message": user_message,
            },
        )
        started.raise_for_status()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            stored = client.get(f"/api/v1/chats/{chat['id']}").json()
            message = stored["chat"]["history"]["messages"].get(reply, {})
            if message.get("done"):
                return chat["id"], message
            time.sleep(2)
    raise SystemExit(f"Open WebUI's answer was not done after {seconds:.0f} s")


def screenshot(url: str, out: Path) -> None:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with tempfile.TemporaryDirectory(prefix="qb-chromium-") as profile:
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=20000",
                "--window-size=1280,900",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                f"--screenshot={out}",
                url,
            ],
            check=True,
            capture_output=True,
            timeout=180,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", default="local", help="serve's --provider")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "chat-ui.png")
    parser.add_argument("--seconds", type=float, default=300, help="the answer's wait")
    args = parser.parse_args(argv)
    open_webui = install()
    qb = str(Path(sys.executable).parent / "quotebound")
    with tempfile.TemporaryDirectory(prefix="qb-chat-ui-") as tmp:
        home = Path(tmp)
        env = {**os.environ, "QUOTEBOUND_HOME": str(home / "qb")}
        store = f"sqlite:///{home / 'qb.db'}"

        def cli(*words: str) -> str:
            done = subprocess.run(
                [qb, *words, "--store", store], env=env, capture_output=True, text=True
            )
            if done.returncode != 0:
                raise SystemExit(f"quotebound {' '.join(words)} failed:\n{done.stderr}")
            return done.stdout

        cli("ingest", str(ROOT / "examples" / "handbook"), "--corpus", "handbook")
        secret = json.loads(cli("keys", "create", "--name", "open-webui", "--json"))["secret"]
        qb_port, ui_port = _port(), _port()
        qb_base = f"http://127.0.0.1:{qb_port}"
        serve = [qb, "serve", "--port", str(qb_port), "--store", store, "--provider",
                 args.provider, "--public-url", qb_base]  # fmt: skip
        ui_env = {
            **os.environ,
            "DATA_DIR": str(home / "open-webui"),
            "WEBUI_SECRET_KEY": uuid.uuid4().hex * 2,
            "WEBUI_AUTH": "False",
            "OFFLINE_MODE": "True",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "ENABLE_VERSION_UPDATE_CHECK": "False",
            "RAG_EMBEDDING_MODEL_AUTO_UPDATE": "False",
            "RAG_EMBEDDING_ENGINE": "openai",
            "ENABLE_PERSISTENT_CONFIG": "False",
            "ENABLE_OLLAMA_API": "False",
            "OLLAMA_BASE_URL": "http://127.0.0.1:11434",
            "ENABLE_OPENAI_API": "True",
            "OPENAI_API_BASE_URL": f"{qb_base}/v1",
            "OPENAI_API_KEY": secret,
            "ANONYMIZED_TELEMETRY": "False",
            "SCARF_NO_ANALYTICS": "true",
            "DO_NOT_TRACK": "true",
        }
        ui = [str(open_webui), "serve", "--host", "127.0.0.1", "--port", str(ui_port)]
        ui_base = f"http://127.0.0.1:{ui_port}"
        with (
            started(serve, env, home / "serve.log") as qb_proc,
            started(ui, ui_env, home / "open-webui.log") as ui_proc,
        ):
            wait_for(f"{qb_base}/readyz", qb_proc, home / "serve.log", 600)
            print(f"quotebound serve ready at {qb_base} (provider {args.provider})", flush=True)
            wait_for(f"{ui_base}/api/config", ui_proc, home / "open-webui.log", 300)
            print(f"Open WebUI ready at {ui_base}", flush=True)
            chat_id, message = ask_through_open_webui(ui_base, "quotebound/handbook", args.seconds)
            content = message.get("content", "")
            sources = message.get("sources") or []
            print(f"the answer Open WebUI stored:\n{content}\n")
            print(f"its sources: {len(sources)}")
            for s in sources:
                print(f"  {s.get('source', {}).get('name')}: {s.get('document')}")
            marker = f"]({qb_base}/shared/"
            if marker not in content or not sources:
                raise SystemExit("FAIL: no quotebound marker link or no sources in the answer")
            link = content.split(marker, 1)[1].split(")", 1)[0]
            page = httpx.get(f"{qb_base}/shared/{link}")
            if page.status_code != 200 or "<mark" not in page.text:
                raise SystemExit(f"FAIL: the marker's link did not open a marked quote: {page}")
            print("a marker's link opens the cited source, quote marked, without a key")
            args.out.parent.mkdir(parents=True, exist_ok=True)
            screenshot(f"{ui_base}/c/{chat_id}", args.out)
            print(f"screenshot: {args.out}")
    print("chat-ui-check: PASS")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
