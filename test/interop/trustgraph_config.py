#!/usr/bin/env python3
"""TrustGraph's own config service and config client, for interop tests of the registry's
TrustGraph config sync, export and import.

    serve [processor flags]   run the reference config service (trustgraph-flow 2.11.1,
                              trustgraph.config.service.Processor) with its Cassandra table store
                              replaced by an in-memory one; prints "READY" once it is subscribed
    show -p URL [-w WS]       print the workspace's config as {type: {key: value}}, read with the
                              reference config client (trustgraph-base AsyncConfigClient)
    put -p URL [-w WS]        write a dump (stdin) with the reference client's put_many
    load-tools [-w WS]        hand a dump (stdin) to the reference agent's tool loader
                              (trustgraph-flow agent.react.service.Processor.on_tools_config) and
                              print the tools it built, or its error
    watch [processor flags]   a processor following config pushes the reference way
                              (trustgraph-base AsyncProcessor.register_config_handler for "tool"
                              and "tool-service"): on each push it hands what it fetched to the
                              agent's tool loader and prints one JSON line

Cassandra cannot be had from the package registries here, so `serve` keeps the service class
and its request handling exactly as shipped and swaps only the storage module
(trustgraph.tables.config.ConfigTableStore), before the service imports it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import types

DUMP_TYPES = ("tool-service", "tool")


class MemoryConfigTableStore:
    """trustgraph.tables.config.ConfigTableStore's methods over a dict: rows keyed by
    (workspace, class), keys in order (Cassandra's clustering order), one version counter."""

    def __init__(self, *args, **kwargs):
        self.rows: dict[tuple[str, str], dict[str, str]] = {}
        self.version = 0

    async def inc_version(self):
        self.version += 1

    async def get_version(self):
        return self.version

    async def put_config(self, workspace, cls, key, value):
        self.rows.setdefault((workspace, cls), {})[key] = value

    async def get_value(self, workspace, cls, key):
        return self.rows.get((workspace, cls), {}).get(key)

    async def get_values(self, workspace, cls):
        return [[k, v] for k, v in sorted(self.rows.get((workspace, cls), {}).items())]

    async def get_values_all_ws(self, cls):
        return [(ws, k, v) for (ws, c), kv in sorted(self.rows.items()) if c == cls for k, v in sorted(kv.items())]

    async def get_keys_all_ws(self, cls):
        return [(ws, k) for (ws, c), kv in sorted(self.rows.items()) if c == cls for k in sorted(kv)]

    async def get_all(self):
        return [(ws, c, k, v) for (ws, c), kv in sorted(self.rows.items()) for k, v in sorted(kv.items())]

    async def get_all_for_workspace(self, workspace):
        return [(c, k, v) for (ws, c), kv in sorted(self.rows.items()) if ws == workspace for k, v in sorted(kv.items())]

    async def get_keys(self, workspace, cls):
        return sorted(self.rows.get((workspace, cls), {}))

    async def delete_key(self, workspace, cls, key):
        # A CQL DELETE of a row that does not exist changes nothing; so here.
        self.rows.get((workspace, cls), {}).pop(key, None)


def serve(argv):
    fake = types.ModuleType("trustgraph.tables.config")
    fake.ConfigTableStore = MemoryConfigTableStore
    sys.modules["trustgraph.tables.config"] = fake
    import trustgraph.tables

    trustgraph.tables.config = fake
    from trustgraph.config.service.service import Processor

    class InMemoryConfigService(Processor):
        async def start(self):
            await super().start()
            print("READY", flush=True)

    sys.argv = [sys.argv[0], *argv]
    InMemoryConfigService.launch("config-svc", __doc__)


def client_args(argv, prog):
    import argparse

    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("-p", "--pulsar-host", default="pulsar://127.0.0.1:6650")
    parser.add_argument("-w", "--workspace", default="default")
    parser.add_argument("--timeout", type=float, default=10)
    return parser.parse_args(argv)


async def with_client(args, use):
    from trustgraph.base.async_config_client import AsyncConfigClient
    from trustgraph.base.async_pulsar_backend import AsyncPulsarBackend
    from trustgraph.schema import config_request_queue, config_response_queue

    backend = AsyncPulsarBackend(host=args.pulsar_host)
    client = await AsyncConfigClient.create(backend, config_request_queue, config_response_queue, timeout=args.timeout)
    try:
        return await use(client)
    finally:
        await client.close()
        await backend.close()


def items_of(dump):
    """tg-import-workspace-config's reading: the wrapped export form, or a bare {type: {key: value}}."""
    if isinstance(dump, dict) and isinstance(dump.get("config"), dict):
        return dump["config"]
    return dump


def show(argv):
    args = client_args(argv, "show")
    config = asyncio.run(with_client(args, lambda client: client.get_all(args.workspace, timeout=args.timeout)))
    print(json.dumps(config, sort_keys=True))


def put(argv):
    args = client_args(argv, "put")
    config = items_of(json.load(sys.stdin))
    values = [(t, k, v) for t in DUMP_TYPES for k, v in config.get(t, {}).items()]
    asyncio.run(with_client(args, lambda client: client.put_many(args.workspace, values, timeout=args.timeout)))
    print(json.dumps({"put": len(values)}))


class LoaderErrors(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


async def load_tools(workspace, config, version=1):
    """What the reference ReAct agent builds from `config` ({type: {key: value}}): its tools, or
    the error it logged when it refused the reload."""
    from trustgraph.agent.react.service import Processor as ReactAgent

    errors = LoaderErrors()
    logger = logging.getLogger("trustgraph.agent.react.service")
    logger.addHandler(errors)

    class Agent:
        config_key = "agent"

        def __init__(self):
            self.agents = {}

    agent = Agent()
    try:
        await ReactAgent.on_tools_config(agent, workspace, config, version)
    finally:
        logger.removeHandler(errors)
    manager = agent.agents.get(workspace)
    if manager is None:
        return {"ok": False, "errors": errors.messages, "types": sorted(config)}
    tools = {}
    for name, tool in sorted(manager.tools.items()):
        keywords = getattr(tool.implementation, "keywords", {})
        tools[name] = {
            "description": tool.description,
            "arguments": [{"name": a.name, "type": a.type, "description": a.description} for a in tool.arguments],
            "request_queue": keywords.get("request_queue"),
            "response_queue": keywords.get("response_queue"),
            "config_values": keywords.get("config_values"),
            "group": tool.config.get("group"),
            "state": tool.config.get("state"),
            "applicable_states": tool.config.get("applicable-states"),
        }
    return {"ok": True, "types": sorted(config), "tools": tools}


def load_tools_main(argv):
    import argparse

    parser = argparse.ArgumentParser(prog="load-tools")
    parser.add_argument("-w", "--workspace", default="default")
    args = parser.parse_args(argv)
    config = items_of(json.load(sys.stdin))
    print(json.dumps(asyncio.run(load_tools(args.workspace, config)), sort_keys=True))


def watch(argv):
    from trustgraph.base import AsyncProcessor

    class ToolConfigWatcher(AsyncProcessor):
        def __init__(self, **params):
            super().__init__(**params)
            self.register_config_handler(self.on_tools_config, types=["tool", "tool-service"])

        async def on_tools_config(self, workspace, config, version):
            result = await load_tools(workspace, config, version)
            print(json.dumps({"workspace": workspace, "version": version, **result}, sort_keys=True), flush=True)

        async def start(self):
            await super().start()
            print(json.dumps({"ready": True}), flush=True)

    sys.argv = [sys.argv[0], *argv]
    ToolConfigWatcher.launch("tool-config-watcher", __doc__)


COMMANDS = {"serve": serve, "show": show, "put": put, "load-tools": load_tools_main, "watch": watch}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(COMMANDS)}}} ...")
    COMMANDS[sys.argv[1]](sys.argv[2:])
    if sys.argv[1] in ("show", "put", "load-tools"):
        # The one-shot commands are done once their answer is printed. Leave without the
        # interpreter's shutdown: the Pulsar C++ client's threads can abort it there
        # ("terminate called without an active exception", seen once under CI load), which
        # would turn a finished command into a failure.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
