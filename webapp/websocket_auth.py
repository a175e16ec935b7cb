"""Who opened a websocket: channels' session and user middleware, with the user looked up on
a thread of the event loop's pool."""

from __future__ import annotations

from typing import Any, cast

from channels.auth import AuthMiddleware, get_user
from channels.db import database_sync_to_async
from channels.sessions import CookieMiddleware, SessionMiddleware

# channels' own look-up, unwrapped from its `database_sync_to_async` (its stubs hide `func`).
_get_user = database_sync_to_async(cast(Any, get_user).func, thread_sensitive=False)


class PooledAuthMiddleware(AuthMiddleware):
    """channels' `AuthMiddleware`, whose look-up of the session's user ran on the one thread
    that channels runs every database call of the process through, each with a new
    database connection: 50 viewers opening a run page at once waited for one another's
    look-ups, the last for seconds, while the process sat idle. The look-up depends on no
    other call's thread, so it runs on the pool."""

    async def resolve_scope(self, scope: Any) -> None:
        scope["user"]._wrapped = await _get_user(scope)


def websocket_auth_stack(inner: Any) -> Any:
    """`channels.auth.AuthMiddlewareStack`, with `PooledAuthMiddleware`."""
    return CookieMiddleware(SessionMiddleware(PooledAuthMiddleware(inner)))
