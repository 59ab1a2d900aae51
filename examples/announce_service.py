#!/usr/bin/env python3
"""A tool service that announces itself to tool registries (issues 14 and 29), built on the reference
base class, trustgraph-base's DynamicToolService.

It serves one tool, `reverse-text` by default ({"text": "..."} -> the text reversed), on
non-persistent://tg/request/<topic> (Shared subscription "<id>-request") and answers on
non-persistent://tg/response/<topic>, exactly as every reference tool service does. Besides, once
its request subscription is ready, it publishes its service descriptor and its tools on the
registry's announcement topic (the registry's ANNOUNCE_TOPIC) with the `pulsar` client the
reference package depends on; again every --heartbeat-interval seconds (a heartbeat thread);
and a goodbye when it stops (SIGINT or SIGTERM). A registry registers what it announces, marks
the tool unavailable when three heartbeats in a row are missing, and at once on the goodbye.

Run it (a broker from scripts/pulsar.sh start, the venv from scripts/python-env.sh, a registry
started with ANNOUNCE_TOPIC and PULSAR_WS_URL):

    export REGISTRY_ANNOUNCE_KEY='{"kty":"OKP","crv":"Ed25519","x":"...","d":"...","kid":"reverse-1"}'
    .venv/bin/python examples/announce_service.py --subject reverse-service \\
        --pulsar-host pulsar://127.0.0.1:6650 --pulsar-admin-url http://127.0.0.1:8080 \\
        --announce-topic non-persistent://tg/registry/announcements \\
        --id reverse --topic reverse --heartbeat-interval 10

then call it through the registry:

    curl -s -X POST http://127.0.0.1:8006/tools/reverse-text/invoke \\
        -H "authorization: Bearer $AGENT_TOKEN" -H 'content-type: application/json' \\
        -d '{"text": "hello"}'

Metrics and Loki are off by default here; every flag of the base class works (see --help).

The key: REGISTRY_ANNOUNCE_KEY (or the variable --key-env names) holds the announcer's private
Ed25519 key as a JWK with its `kid`; the registry's ANNOUNCER_KEYS_FILE binds the public part
(the same JWK without "d") to --subject, with the queues and scopes it may announce. It is read
from the environment, not a flag, because the base class logs its arguments and reports them as
metrics labels; this program never prints or logs it. Signing needs the `cryptography` package.

The message: every announcement is one Pulsar message on the announcement topic whose payload is
a compact JWS (header {"alg": "EdDSA", "kid": ..., "typ": "tool-registry-announcement+jws"}) over
this JSON, the whole announcement every time (src/model/announcement.ts in the registry):

    {
      "v": 2, "sub": "reverse-service", "instance": "<random per process>", "seq": 1, "iat": 1767000000,
      "service": {"id": "reverse", "topic": "reverse"},
      "tools": [{"type": "tool-service", "name": "reverse-text", "service": "reverse",
                 "description": "...", "arguments": [{"name": "text", "type": "string",
                 "description": "..."}]}],
      "heartbeatIntervalS": 10,
      "goodbye": false
    }

`seq` counts up from 1 for this process (`instance`): a registry takes each number once, so a
message read off the topic cannot be replayed; `iat` is the signing time in seconds.
`service` is a tool service descriptor as the registry's PUT /tool-services/{id} takes it, each
of `tools` a tool descriptor as PUT /tools/{name} takes it (naming the service);
`heartbeatIntervalS` is 1 to 3600; `goodbye: true` (same message otherwise) says the service is
stopping. A registry never lets an announcement replace a tool or service an operator registered.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import os
import signal
import sys
import threading
import time
import uuid
from typing import Any

import pulsar
from trustgraph.base.dynamic_tool_service import DynamicToolService

logger = logging.getLogger("announce_service")

ANNOUNCEMENT_VERSION = 2
ANNOUNCEMENT_TYP = "tool-registry-announcement+jws"
DEFAULT_KEY_ENV = "REGISTRY_ANNOUNCE_KEY"
DEFAULT_ANNOUNCE_TOPIC = "non-persistent://tg/registry/announcements"
# Between failed announcements: doubling from the first to the last (then the heartbeat's).
RETRY_MIN_S = 0.25
RETRY_MAX_S = 10.0
# How long one publish may take, the goodbye's included.
SEND_TIMEOUT_MS = 3000


def heartbeat_seconds(text: str) -> float:
    """--heartbeat-interval: 1 to 3600 seconds, as the registry takes it."""
    value = float(text)
    if not 1 <= value <= 3600:
        raise argparse.ArgumentTypeError("must be 1 to 3600 seconds")
    return value


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class Signer:
    """Signs announcements as a compact JWS (EdDSA) with the announcer's private Ed25519 JWK."""

    def __init__(self, jwk_text: str, subject: str) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        jwk = json.loads(jwk_text)
        if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519" or "d" not in jwk or not jwk.get("kid"):
            raise SystemExit("the announce key must be a private Ed25519 JWK with a kid")
        d = jwk["d"]
        self._key = Ed25519PrivateKey.from_private_bytes(base64.urlsafe_b64decode(d + "=" * (-len(d) % 4)))
        self._header = b64url(json.dumps({"alg": "EdDSA", "kid": jwk["kid"], "typ": ANNOUNCEMENT_TYP}).encode())
        self.subject = subject
        self.instance = str(uuid.uuid4())
        self._seq = 0

    def sign(self, content: dict[str, Any]) -> str:
        self._seq += 1
        payload = {"v": ANNOUNCEMENT_VERSION, "sub": self.subject, "instance": self.instance,
                   "seq": self._seq, "iat": int(time.time()), **content}
        signing_input = f"{self._header}.{b64url(json.dumps(payload).encode())}"
        return f"{signing_input}.{b64url(self._key.sign(signing_input.encode('ascii')))}"


def reverse_text(arguments: dict[str, Any]) -> str:
    return str(arguments.get("text", ""))[::-1]


class Announcer:
    """Publishes a service's announcement on the announcement topic from a thread of its own.

    listening() (the service's subscription is ready) announces at once and starts the heartbeat;
    update(tools) announces the new tools at once; goodbye() stops the heartbeat and says goodbye;
    close() says goodbye if it has not and closes the client. A failed publish is logged and
    retried with backoff; the pulsar client reconnects to the broker by itself.
    """

    def __init__(
        self, *, pulsar_host: str, api_key: str | None, listener: str | None,
        topic: str, signer: Signer, service: dict[str, Any],
        tools: list[dict[str, Any]], heartbeat_interval_s: float,
    ) -> None:
        self.topic = topic
        self._signer = signer
        self._service = service
        self._tools = tools
        self._interval = heartbeat_interval_s
        client_args: dict[str, Any] = {
            "service_url": pulsar_host,
            "operation_timeout_seconds": 10,
            "logger": pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
        }
        if api_key:
            client_args["authentication"] = pulsar.AuthenticationToken(api_key)
        if listener:
            client_args["listener_name"] = listener
        self._client = pulsar.Client(**client_args)
        self._producer: Any = None
        self._lock = threading.Lock()  # one publish at a time; guards the state below
        self._wake = threading.Event()
        self._listening = False
        self._live = False  # announced since the last goodbye
        self._closed = False
        self._thread = threading.Thread(target=self._heartbeat, name="announcer", daemon=True)
        self._thread.start()

    def message(self, goodbye: bool = False) -> str:
        """The whole announcement, signed, with the next sequence number."""
        return self._signer.sign({
            "service": self._service,
            "tools": self._tools,
            "heartbeatIntervalS": self._interval,
            "goodbye": goodbye,
        })

    def listening(self) -> None:
        """The service takes requests: announce now, then every heartbeat."""
        with self._lock:
            self._listening = True
        self._wake.set()

    def update(self, tools: list[dict[str, Any]]) -> None:
        """Announce other tools, at once."""
        with self._lock:
            self._tools = list(tools)
        self._wake.set()

    def goodbye(self) -> None:
        """The service stops taking requests: no more heartbeats, and a goodbye if it announced."""
        with self._lock:
            self._listening = False
            if not self._live:
                return
            try:
                self._publish(goodbye=True)
                self._live = False
                logger.info("said goodbye on %s", self.topic)
            except Exception as e:  # noqa: BLE001 - the registry notices the missed heartbeats
                logger.warning("cannot say goodbye on %s (%s); registries mark the service "
                               "unavailable after missed heartbeats", self.topic, type(e).__name__)

    def close(self) -> None:
        self.goodbye()
        with self._lock:
            self._closed = True
        self._wake.set()
        self._thread.join(timeout=5)
        try:
            self._client.close()
        except Exception:  # noqa: BLE001
            pass

    def _publish(self, goodbye: bool) -> None:
        """One announcement; the caller holds the lock. Raises when the broker did not take it."""
        if self._producer is None:
            self._producer = self._client.create_producer(
                self.topic, send_timeout_millis=SEND_TIMEOUT_MS, block_if_queue_full=False,
            )
        self._producer.send(self.message(goodbye).encode("ascii"))

    def _heartbeat(self) -> None:
        retry_s = RETRY_MIN_S
        wait_s: float | None = None  # until listening() wakes it
        while True:
            self._wake.wait(wait_s)
            self._wake.clear()
            with self._lock:
                if self._closed:
                    return
                if not self._listening:
                    wait_s = None
                    continue
                try:
                    self._publish(goodbye=False)
                except Exception as e:  # noqa: BLE001 - logged without the message
                    wait_s = min(retry_s, self._interval)
                    retry_s = min(retry_s * 2, RETRY_MAX_S)
                    logger.warning("cannot announce on %s (%s: %s); retrying in %.2f s",
                                   self.topic, type(e).__name__, e, wait_s)
                    continue
                if not self._live:
                    logger.info("announced service %s (%d tools) on %s, heartbeat every %s s",
                                self._service.get("id"), len(self._tools), self.topic, self._interval)
                self._live = True
                retry_s = RETRY_MIN_S
                wait_s = self._interval


# One announcer for the process: the base class's launch() builds a new service after a failure,
# and the final goodbye (run() below) must reach the same one.
_announcer: Announcer | None = None


def announcer_for(params: dict[str, Any]) -> Announcer:
    global _announcer
    if _announcer is None:
        key_env = params.get("key_env") or DEFAULT_KEY_ENV
        key = os.environ.get(key_env, "")
        if not key:
            raise SystemExit(f"set {key_env} to the announcer's private JWK")
        service_id = params["id"]
        topic = params.get("topic") or service_id
        tool_name = params.get("tool_name") or "reverse-text"
        _announcer = Announcer(
            pulsar_host=params["pulsar_host"],
            api_key=params.get("pulsar_api_key"),
            listener=params.get("pulsar_listener"),
            topic=params.get("announce_topic") or DEFAULT_ANNOUNCE_TOPIC,
            signer=Signer(key, params.get("subject") or service_id),
            service={"id": service_id, "topic": topic},
            tools=[{
                "type": "tool-service",
                "name": tool_name,
                "description": "Reverse a text, character by character",
                "service": service_id,
                "arguments": [
                    {"name": "text", "type": "string", "description": "The text to reverse"},
                ],
            }],
            heartbeat_interval_s=float(params.get("heartbeat_interval") or 10),
        )
    return _announcer


class AnnouncingService(DynamicToolService):

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.announcer = announcer_for(params)

    async def start(self) -> None:
        await super().start()  # the request subscription is ready once this returns
        self.announcer.listening()

    async def stop(self) -> None:
        # Before the subscription goes, so that registries stop sending calls here first.
        await asyncio.to_thread(self.announcer.goodbye)
        await super().stop()

    async def invoke(self, *args: Any) -> str:
        # trustgraph-base <= 2.3: invoke(user, config, arguments); from 2.4: invoke(config, arguments).
        arguments = args[-1]
        return reverse_text(arguments)

    @staticmethod
    def add_args(parser: argparse.ArgumentParser) -> None:
        DynamicToolService.add_args(parser)
        parser.add_argument(
            "--announce-topic", default=DEFAULT_ANNOUNCE_TOPIC,
            help=f"the registry's ANNOUNCE_TOPIC (default: {DEFAULT_ANNOUNCE_TOPIC})",
        )
        parser.add_argument(
            "--heartbeat-interval", type=heartbeat_seconds, default=10.0,
            help="seconds between announcements, 1 to 3600 (default: 10)",
        )
        parser.add_argument(
            "--tool-name", default="reverse-text", help="the tool's name (default: reverse-text)",
        )
        parser.add_argument(
            "--key-env", default=DEFAULT_KEY_ENV,
            help=f"environment variable holding the announcer's private JWK (default: {DEFAULT_KEY_ENV})",
        )
        parser.add_argument(
            "--subject", default=None,
            help="the announcer's subject, as the registry's ANNOUNCER_KEYS_FILE binds its key (default: the --id)",
        )
        parser.set_defaults(topic="reverse", metrics=False, loki_enabled=False)


def key_configured(argv: list[str]) -> str | None:
    """The name of the key's variable when it is unset or empty, else None."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--key-env", default=DEFAULT_KEY_ENV)
    known, _ = pre.parse_known_args(argv)
    return None if os.environ.get(known.key_env) else known.key_env


def run() -> None:
    if not {"-h", "--help"} & set(sys.argv[1:]):
        missing = key_configured(sys.argv[1:])
        if missing is not None:
            print(f"announce_service: set {missing} to the announcer's private Ed25519 JWK "
                  "(the registry's ANNOUNCER_KEYS_FILE binds its public part)", file=sys.stderr)
            sys.exit(2)
    # SIGTERM stops it as SIGINT does: asyncio cancels the service, whose stop() says goodbye.
    signal.signal(signal.SIGTERM, lambda signum, frame: signal.raise_signal(signal.SIGINT))
    try:
        AnnouncingService.launch("reverse", __doc__)
    except KeyboardInterrupt:
        pass
    finally:
        if _announcer is not None:
            _announcer.close()
    sys.exit(0)


if __name__ == "__main__":
    run()
