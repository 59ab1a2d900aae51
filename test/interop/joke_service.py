#!/usr/bin/env python3
"""A minimal tool service built on the reference base class, for interop tests.

It subclasses trustgraph-base's DynamicToolService unchanged, so it speaks exactly the wire
protocol of the reference tool services: it listens on non-persistent://tg/request/<topic>
(subscription "<id>-request", Shared) and answers on non-persistent://tg/response/<topic> with
{"error": null, "response": "...", "end_of_stream": true} and the request's `id` property.

Set up the venv with scripts/python-env.sh, start a broker with scripts/pulsar.sh start, then:

    .venv/bin/python test/interop/joke_service.py \\
        --pulsar-host pulsar://127.0.0.1:6650 --pulsar-admin-url http://127.0.0.1:8080 \\
        --id joke --topic joke --no-metrics --no-loki-enabled

(--topic defaults to "joke" here, metrics and Loki default to off; every flag of the base
class is accepted, see --help.)

Test hooks: arguments {"fail": "<text>"} make invoke raise, so the base class sends its error
response {"error": {"type": "tool-service-error", "message": "<text>"}, "response": "", ...};
{"blob": "<text>"} answers "received <n> bytes, sha256 <hex>" of the text's UTF-8 bytes, so a
test can show a large argument arrived whole.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
from typing import Any

from trustgraph.base.dynamic_tool_service import DynamicToolService

JOKES = {
    "programming": "Why do programmers prefer dark mode? Because light attracts bugs!",
    "pulsar": "Why did the message cross the broker? To get to the other topic!",
}
DEFAULT_JOKE = "I would tell you a UDP joke, but you might not get it."

# The caller's identity for the request being handled (see on_request).
_request_user: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "request_user", default=None
)


def _raw_request_user(msg: Any) -> str | None:
    """`user` from the raw JSON body of a request, if it has one."""
    try:
        raw = getattr(msg, "_msg", msg)  # trustgraph's PulsarMessage wraps the pulsar Message
        body = json.loads(raw.data().decode("utf-8"))
        user = body.get("user") if isinstance(body, dict) else None
        return user if isinstance(user, str) and user else None
    except Exception:
        return None


def make_joke(user: str, config: dict, arguments: dict) -> str:
    if "fail" in arguments:
        raise ValueError(str(arguments["fail"]))
    if "blob" in arguments:
        data = str(arguments["blob"]).encode("utf-8")
        return f"received {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}"
    style = config.get("style", "pun")
    topic = arguments.get("topic", "")
    joke = JOKES.get(str(topic).lower(), DEFAULT_JOKE)
    return f"Hey {user}! Here's a {style} for you: {joke}"


class JokeService(DynamicToolService):

    async def on_request(self, msg, consumer, flow):
        # trustgraph-base 2.1-2.3 passed the request's `user` to invoke(user, config,
        # arguments); from 2.4 on the schema has no `user` and invoke gets (config, arguments).
        # Read `user` from the raw body so both generations greet the caller.
        token = _request_user.set(_raw_request_user(msg))
        try:
            await super().on_request(msg, consumer, flow)
        finally:
            _request_user.reset(token)

    async def invoke(self, *args):
        if len(args) == 3:  # trustgraph-base <= 2.3: invoke(user, config, arguments)
            user, config, arguments = args
        else:  # trustgraph-base >= 2.4: invoke(config, arguments)
            config, arguments = args
            user = _request_user.get() or "trustgraph"
        return make_joke(user, config, arguments)

    @staticmethod
    def add_args(parser) -> None:
        DynamicToolService.add_args(parser)
        parser.set_defaults(topic="joke", metrics=False, loki_enabled=False)


def run() -> None:
    JokeService.launch("joke", __doc__)


if __name__ == "__main__":
    run()
