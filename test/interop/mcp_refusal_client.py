"""One MCP session against the registry with the official Python SDK (1.x or 2.x): a call the
registry refuses, then one it allows, then tools/list, each printed as a JSON line, so a test can
see that the refusal left the session usable and carried the registry's reason (issue 31).

    python mcp_refusal_client.py URL REFUSED_TOOL [ALLOWED_TOOL]   (MCP_TOKEN: bearer token, optional)
"""
import asyncio
import json
import os
import sys
from contextlib import AsyncExitStack
from importlib.metadata import version

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def emit(**fields):
    print(json.dumps(fields), flush=True)


def describe(result):
    texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    # 1.x spells the fields as the wire does; 2.x in snake case.
    is_error = getattr(result, "isError", None) if hasattr(result, "isError") else getattr(result, "is_error", None)
    meta = getattr(result, "meta", None)
    return {"isError": bool(is_error), "text": " ".join(texts), "meta": meta}


def reason(err):
    """The error, and for an ExceptionGroup the errors in it (where HTTPStatusError shows)."""
    inner = getattr(err, "exceptions", None)
    text = f"{type(err).__name__}: {err}"
    return text + "".join(f" [{reason(e)}]" for e in inner) if inner else text


async def step(name, action):
    try:
        emit(step=name, ok=True, **(await action()))
    except BaseException as err:  # an ExceptionGroup when the transport's task group ends
        emit(step=name, ok=False, error=reason(err))
        raise


async def main():
    url, refused = sys.argv[1], sys.argv[2]
    allowed = sys.argv[3] if len(sys.argv) > 3 else None
    token = os.environ.get("MCP_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else None
    emit(step="sdk", ok=True, version=version("mcp"))
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
        streams = await stack.enter_async_context(streamable_http_client(url, http_client=http))
        session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
        await session.initialize()
        await step("refused", lambda: asyncio.wait_for(call(session, refused), 20))
        if allowed is not None:
            await step("allowed", lambda: asyncio.wait_for(call(session, allowed), 20))
        await step("list", lambda: asyncio.wait_for(names(session), 20))


async def call(session, name):
    return describe(await session.call_tool(name, {"text": "from python"}))


async def names(session):
    return {"tools": sorted(t.name for t in (await session.list_tools()).tools)}


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except BaseException as err:
        emit(step="session", ok=False, error=reason(err))
        sys.exit(1)
