"""The official Python SDK 2.x at MCP revision 2026-07-28 listening to the registry (issue 31):
`server/discover`, then `subscriptions/listen` for tool-list changes through the SDK's own
`listen()`, and on each change the tools listed again, each printed as a JSON line. Runs until
the stream ends (or it is killed).

    python mcp_modern_listen.py URL   (MCP_TOKEN: bearer token, optional)
"""
import asyncio
import json
import os
import sys
from contextlib import AsyncExitStack

from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import listen
from mcp.shared._httpx_utils import create_mcp_http_client


def emit(**fields):
    print(json.dumps(fields), flush=True)


async def list_all(session):
    names, cursor = [], None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await asyncio.wait_for(session.list_tools(params=params), 20)
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return names


async def main():
    url = sys.argv[1]
    token = os.environ.get("MCP_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
        streams = await stack.enter_async_context(streamable_http_client(url, http_client=http))
        session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
        found = await asyncio.wait_for(session.discover(), 20)
        emit(
            step="discover",
            negotiated=session.protocol_version,
            listChanged=bool(found.capabilities.tools and found.capabilities.tools.list_changed),
        )
        async with listen(session, tools_list_changed=True) as subscription:
            emit(
                step="listening",
                subscription=subscription.subscription_id,
                honored=subscription.honored.model_dump(by_alias=True, exclude_none=True),
                tools=await list_all(session),
            )
            async for event in subscription:
                emit(step="event", kind=type(event).__name__, tools=await list_all(session))
        emit(step="ended")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except BaseException as err:
        emit(step="error", error=f"{type(err).__name__}: {err}")
        sys.exit(1)
