"""Which Dask cluster a sweep runs on: a given client, an address, the current client, or a new
``LocalCluster`` — in that order."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ._grid import SweepError

__all__ = ["dask_client"]


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - dask is in the test extra
        raise SweepError("backend='dask' needs dask.distributed; install it with "
                         "pip install 'nhcontrol[dask]' (or 'dask[distributed]')") from exc
    return distributed


@contextlib.contextmanager
def dask_client(client: Any = None, address: str | None = None, *, n_workers: int,
                timeout: float = 30.0) -> Iterator[tuple[Any, str]]:
    """Yield ``(client, how)``; what this function opened it also closes.

    ``how`` says which cluster was used: ``"client"``, ``"address"``, ``"current"`` or
    ``"local"``.
    """
    distributed = _import_distributed()
    if client is not None:
        if not isinstance(client, distributed.Client):
            raise SweepError(f"client must be a dask.distributed.Client, got "
                             f"{type(client).__name__}; or pass address='tcp://host:port'")
        yield client, "client"
        return
    if address is not None:
        if not isinstance(address, str) or "://" not in address and ":" not in address:
            raise SweepError(f"address must be a scheduler address such as 'tcp://10.0.0.5:8786', "
                             f"got {address!r}")
        try:
            cl = distributed.Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise SweepError(f"could not connect to the Dask scheduler at {address!r} within "
                             f"{timeout:g} s ({exc}); is `dask scheduler` running there and "
                             f"reachable?") from exc
        try:
            yield cl, "address"
        finally:
            cl.close()
        return
    try:
        current = distributed.default_client()
    except ValueError:
        current = None
    if current is not None and current.status == "running":
        yield current, "current"
        return
    cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                       dashboard_address=":0")
    cl = distributed.Client(cluster, set_as_default=False)
    try:
        yield cl, "local"
    finally:
        cl.close()
        cluster.close()
