"""What the routes depend on (FastAPI ``Depends``): the service and its store, the caller's
credentials, a request's options and its validated specs."""

from __future__ import annotations

import asyncio
import hmac
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from starlette.requests import ClientDisconnect

from threadmap.errors import ThreadmapError
from threadmap.service.core import Service, Settings
from threadmap.service.model import Options, SpecJob, sniff_format, validate
from threadmap.service.store import Job, Store


def get_service(request: Request) -> Service:
    svc: Service = request.app.state.service
    return svc


def get_settings(svc: Annotated[Service, Depends(get_service)]) -> Settings:
    return svc.settings


def get_store(svc: Annotated[Service, Depends(get_service)]) -> Store:
    return svc.store


ServiceDep = Annotated[Service, Depends(get_service)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
StoreDep = Annotated[Store, Depends(get_store)]


def authenticated(request: Request, settings: SettingsDep) -> bool:
    """Whether the request carries the server's token (always false without one).  A wrong
    token is a 401, never taken for no token."""
    if settings.token is None:
        return False
    header = request.headers.get("authorization")
    if header is None:
        return False
    scheme, _, got = header.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(got.strip().encode(), settings.token.encode()):
        raise HTTPException(401, "this endpoint needs 'Authorization: Bearer <token>'",
                            headers={"WWW-Authenticate": "Bearer"})
    return True


Authenticated = Annotated[bool, Depends(authenticated)]


def require_token(settings: SettingsDep, ok: Authenticated) -> None:
    """The write endpoints: the token, when the server has one."""
    if settings.token is not None and not ok:
        raise HTTPException(401, "this endpoint needs 'Authorization: Bearer <token>'",
                            headers={"WWW-Authenticate": "Bearer"})


def options(request: Request) -> Options:
    """A job's options from the query: ``checks``, ``engine``, ``sizes``, ``exhaustive``."""
    q = request.query_params
    try:
        flag = q.get("exhaustive", "false").lower()
        if flag not in ("1", "true", "yes", "0", "false", "no", ""):
            raise ValueError(f"exhaustive must be true or false, got {q.get('exhaustive')!r}")
        return Options.of(q.get("checks"), q.get("engine", "verify"), q.get("sizes"), flag in ("1", "true", "yes"))
    except (ThreadmapError, ValueError) as e:
        raise HTTPException(422, str(e)) from None


OptionsDep = Annotated[Options, Depends(options)]


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused past ``limit`` bytes before it is all read."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"request body of {declared} bytes; the limit is {limit}")
    chunks, n = [], 0
    try:
        async for chunk in request.stream():
            n += len(chunk)
            if n > limit:
                raise HTTPException(413, f"request body over the limit of {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        raise HTTPException(400, "the client went away before sending the whole body") from None
    return b"".join(chunks)


def _spec_error(e: Exception) -> HTTPException:
    return HTTPException(422, str(e) if isinstance(e, ThreadmapError) else f"{type(e).__name__}: {e}")


async def specs(request: Request, settings: SettingsDep, opts: OptionsDep) -> list[SpecJob]:
    """Every spec of a request (one body, or the files of a multipart form), validated: the
    only validation a job's spec gets."""
    body = await read_body(request, settings.limits.max_body_bytes)
    ctype = request.headers.get("content-type", "")
    items: list[tuple[str, str | None, bytes]] = []
    if ctype.startswith("multipart/form-data"):
        from starlette.datastructures import UploadFile
        from starlette.requests import Request as StarletteRequest

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        form = await StarletteRequest(request.scope, receive).form(max_files=64, max_fields=64)
        for _, value in form.multi_items():
            if isinstance(value, UploadFile):
                items.append((value.filename or "spec.yaml", value.content_type, await value.read()))
        if not items:
            raise HTTPException(400, "a multipart request needs one or more spec files")
    else:
        items.append(("spec", ctype, body))
    out = []
    for name, ct, raw in items:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise HTTPException(400, f"{name}: the spec is not UTF-8 text") from None
        if not text.strip():
            raise HTTPException(400, f"{name}: empty spec")
        fmt = sniff_format(ct, name, text)
        label = name if "." in name else f"{name}.{fmt}"
        try:
            out.append(await asyncio.to_thread(validate, text, fmt, label, opts, settings.limits))
        except (ThreadmapError, ValueError, RecursionError) as e:
            raise _spec_error(e) from None
    return out


SpecsDep = Annotated[list[SpecJob], Depends(specs)]


def get_job(job_id: str, store: StoreDep) -> Job:
    """The stored job the path names (404 when there is none)."""
    job = store.get(job_id) if len(job_id) <= 64 else None
    if job is None:
        raise HTTPException(404, f"no job {job_id!r}")
    return job


JobDep = Annotated[Job, Depends(get_job)]


def done_job(job: JobDep) -> Job:
    """The stored job, finished with a report (409 otherwise)."""
    if job.state != "done" or job.report is None:
        raise HTTPException(409, f"job {job.id} is {job.state}" + (f": {job.error}" if job.error else ""))
    return job


DoneJobDep = Annotated[Job, Depends(done_job)]
