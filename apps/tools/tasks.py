"""Celery tasks of tool servers: thin, named, idempotent (acks_late); each calls one service."""

from celery import shared_task

from apps.tools import discovery


@shared_task(name="tools.discover")
def discover(server_id: str) -> str:
    return discovery.server_discover(server_id=server_id)


@shared_task(name="tools.discover_due")
def discover_due() -> int:
    return len(discovery.servers_discover_due())
