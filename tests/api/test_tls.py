"""With a certificate, the API answers over TLS only (the setting that allows a bind
beyond loopback), on asyncio and trio, through the real hypercorn server."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import anyio
import httpx
import pytest
from anyio.abc import SocketAttribute
from sniper.harness import pick_item, quiet_sandbox, rules_text

from engine import VirtualClock
from engine.api import api_app, serve_app
from engine.metrics import open_listener
from engine.rules import ApiSettings

from .helpers import READ, bearer, served

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


def _certificate(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


async def test_the_api_speaks_tls_when_given_a_certificate(
    clock: VirtualClock, tmp_path: Path
) -> None:
    cert, key = _certificate(tmp_path)
    settings = ApiSettings(certfile=str(cert), keyfile=str(key))
    sandbox = quiet_sandbox(clock)
    async with served(clock, sandbox, rules_text(pick_item(sandbox).name)) as s:
        listener = await open_listener("127.0.0.1", 0)
        port = listener.extra(SocketAttribute.local_port)
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_app, listener, api_app(s.api), settings)
            trusted = ssl.create_default_context(cafile=str(cert))
            async with httpx.AsyncClient(verify=trusted) as client:
                url = f"https://127.0.0.1:{port}/api/status"
                with anyio.fail_after(20):
                    while True:  # the server task starts beside this one
                        try:
                            answer = await client.get(url, headers=bearer(READ))
                            break
                        except httpx.ConnectError:
                            await anyio.sleep(0.01)
                assert answer.status_code == 200
                assert answer.json()["mode"] == "starting"
                with pytest.raises(httpx.HTTPError):  # no answer in clear on that port
                    await client.get(f"http://127.0.0.1:{port}/api/status", headers=bearer(READ))
            tg.cancel_scope.cancel()
