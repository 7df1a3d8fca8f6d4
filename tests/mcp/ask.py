"""Asks questions of `quarry mcp` over stdio with the MCP SDK and times each answer (the numbers
of docs/rag.md). Not a test: run it with the venv of scripts/mcp-tests.sh,

    target/mcp-tests-venv/bin/python tests/mcp/ask.py QUARRY DATA INDEX FIELD QUESTION...

It starts `QUARRY mcp --data DATA`, calls `semantic_search` (k 3) once per question, in order,
and prints each answer's wall time as the client sees it (the first includes loading the model)
and the hits' `path` fields, then the median of the calls after the first."""
import asyncio
import json
import statistics
import sys
import time

from mcp import Client, StdioServerParameters


async def main(quarry, data, index, field, questions):
    t0 = time.perf_counter()
    params = StdioServerParameters(command=quarry, args=["mcp", "--data", data])
    async with Client(params) as c:
        print(f"session started in {time.perf_counter() - t0:.2f} s")
        times = []
        for q in questions:
            t = time.perf_counter()
            r = await c.call_tool("semantic_search", {"index": index, "field": field, "question": q,
                                                      "k": 3, "fields": ["path"]})
            ms = (time.perf_counter() - t) * 1000
            times.append(ms)
            if r.is_error:
                print(f"{ms:8.1f} ms  {q!r}: ERROR {r.content[0].text}")
                continue
            hits = json.loads(r.content[0].text)["hits"]
            found = ", ".join(f"{h['fields'].get('path')} ({h['score']:.3f})" for h in hits)
            print(f"{ms:8.1f} ms  {q!r}: {found}")
        if len(times) > 1:
            print(f"median after the first: {statistics.median(times[1:]):.1f} ms "
                  f"over {len(times) - 1} questions")


if __name__ == "__main__":
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    asyncio.run(main(*sys.argv[1:5], sys.argv[5:]))
