"""berth_client.aio: the asyncio client (grpc.aio), the same surface as `berth_client.Client`.

async with AsyncClient("127.0.0.1:50051") as client:
    async with client.claim(cpus=1, node="study.fit") as grant: ...
    value = await client.run(source=SOURCE, kwargs={"x": 1})
    async for item in client.stream_run(source=SOURCE): ...
"""

from .claims import AsyncClaimLease
from .client import AsyncClient
from .groups import AsyncGroupLease
from .runs import AsyncRunStream
from .streams import AsyncEventStream

__all__ = ["AsyncClaimLease", "AsyncClient", "AsyncEventStream", "AsyncGroupLease", "AsyncRunStream"]
