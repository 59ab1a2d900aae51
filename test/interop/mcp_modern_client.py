"""The official Python SDK 2.x at MCP revision 2026-07-28 against the registry (issue 31):
`server/discover`, every page of `tools/list` with its caching hints, then a call, each printed
as a JSON line.

    python mcp_modern_client.py URL TOOL   (MCP_TOKEN: bearer token, optional)
"""
import asyncio
import json
import os
import sys
from contextlib import AsyncExitStack
from importlib.metadata import version

from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def emit(**fields):
    print(json.dumps(fields), flush=True)


async def main():
    url, tool = sys.argv[1], sys.argv[2]
    token = os.environ.get("MCP_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else None
    emit(step="sdk", version=version("mcp"))
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
        streams = await stack.enter_async_context(streamable_http_client(url, http_client=http))
        session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
        found = await asyncio.wait_for(session.discover(), 20)
        emit(
            step="discover",
            negotiated=session.protocol_version,
            supported=found.supported_versions,
            tools=found.capabilities.tools is not None,
            server=session.server_info.name if session.server_info else None,
        )
        cursor = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await asyncio.wait_for(session.list_tools(params=params), 20)
            emit(
                step="page",
                tools=[t.name for t in page.tools],
                ttlMs=page.ttl_ms,
                cacheScope=page.cache_scope,
                resultType=page.result_type,
            )
            cursor = page.next_cursor
            if not cursor:
                break
        result = await asyncio.wait_for(session.call_tool(tool, {"text": "from python"}), 20)
        texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
        emit(step="call", isError=bool(result.is_error), text=" ".join(texts))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except BaseException as err:
        emit(step="error", error=f"{type(err).__name__}: {err}")
        sys.exit(1)
