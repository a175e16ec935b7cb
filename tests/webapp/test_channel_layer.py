"""The SQLite channel layer of the embedded set-up: messages cross layer instances (as they
cross processes: a worker's emitter and the web server's consumers)."""

from __future__ import annotations

import asyncio

import pytest
from channels.exceptions import ChannelFull

from webapp.channel_layers import SQLiteChannelLayer


def run(coroutine):
    return asyncio.run(coroutine)


def test_group_send_reaches_a_member_in_another_instance(tmp_path):
    path = str(tmp_path / "layer.sqlite3")

    async def scenario():
        web, worker = SQLiteChannelLayer(path, poll_interval=0.01), SQLiteChannelLayer(path)
        channel = await web.new_channel()
        await web.group_add("run-1", channel)
        for number in range(3):
            await worker.group_send("run-1", {"type": "run.event", "n": number})
        received = [await asyncio.wait_for(web.receive(channel), 2) for _ in range(3)]
        await web.close()
        await worker.close()
        return received

    assert [m["n"] for m in run(scenario())] == [0, 1, 2]


def test_discarded_member_gets_nothing(tmp_path):
    path = str(tmp_path / "layer.sqlite3")

    async def scenario():
        layer = SQLiteChannelLayer(path, poll_interval=0.01)
        channel = await layer.new_channel()
        await layer.group_add("run-2", channel)
        await layer.group_discard("run-2", channel)
        await layer.group_send("run-2", {"type": "run.event"})
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(layer.receive(channel), 0.3)

    run(scenario())


def test_send_to_a_full_channel_raises(tmp_path):
    async def scenario():
        layer = SQLiteChannelLayer(str(tmp_path / "layer.sqlite3"), capacity=2)
        await layer.send("direct.one", {"type": "x"})
        await layer.send("direct.one", {"type": "x"})
        with pytest.raises(ChannelFull):
            await layer.send("direct.one", {"type": "x"})

    run(scenario())


def test_expired_messages_are_not_delivered(tmp_path):
    async def scenario():
        layer = SQLiteChannelLayer(str(tmp_path / "layer.sqlite3"), expiry=-1, poll_interval=0.01)
        await layer.send("direct.two", {"type": "x"})
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(layer.receive("direct.two"), 0.2)

    run(scenario())


def test_flush_empties_groups_and_messages(tmp_path):
    async def scenario():
        layer = SQLiteChannelLayer(str(tmp_path / "layer.sqlite3"), poll_interval=0.01)
        await layer.group_add("run-3", "direct.three")
        await layer.send("direct.three", {"type": "x"})
        await layer.flush()
        await layer.group_send("run-3", {"type": "y"})
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(layer.receive("direct.three"), 0.2)

    run(scenario())


def test_invalid_group_name_is_refused(tmp_path):
    layer = SQLiteChannelLayer(str(tmp_path / "layer.sqlite3"))
    with pytest.raises(TypeError):
        run(layer.group_send("bad name!", {"type": "x"}))


def _redis_url() -> str:
    import os

    import redis

    url = os.environ.get("WORKBENCH_TEST_REDIS", "redis://127.0.0.1:6379/14")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except Exception as exc:
        if os.environ.get("WORKBENCH_REQUIRE_SERVICES"):
            pytest.fail(f"Redis is not reachable at {url} ({exc})")
        pytest.skip(f"Redis is not reachable at {url}")
    return url


def _production_layer(url: str):
    """A Redis layer as production configures it (`webapp.settings.redis_channel_layer`)."""
    from django.utils.module_loading import import_string

    from webapp.settings import redis_channel_layer

    config = redis_channel_layer(url)
    return import_string(config["BACKEND"])(**config["CONFIG"])


def test_a_quiet_redis_channel_outlasts_the_layer_s_blocking_wait():
    """The Redis layer as production configures it: a websocket with no event for longer
    than the layer's blocking wait (and redis-py's default read timeout, both 5 s) keeps
    receiving. With the old configuration this raised redis.exceptions.TimeoutError."""
    url = _redis_url()

    async def scenario():
        web = _production_layer(url)
        worker = _production_layer(url)
        quiet = web.brpop_timeout + 3
        channel = await web.new_channel()
        await web.group_add("run-quiet", channel)
        receiving = asyncio.ensure_future(web.receive(channel))
        # Nothing arrives for longer than the blocking wait; the receive must still be alive.
        done, _ = await asyncio.wait({receiving}, timeout=quiet)
        assert not done, f"receive ended during a quiet period: {receiving.result()!r}"
        await worker.group_send("run-quiet", {"type": "run.event", "n": 1})
        message = await asyncio.wait_for(receiving, 10)
        await web.flush()
        await web.close_pools()
        await worker.close_pools()
        return message

    assert run(scenario())["n"] == 1


def test_one_redis_receive_takes_every_message_waiting_for_the_process():
    """channels_redis took one message per four round trips to Redis: under load, a web
    process drew messages more slowly than the workers of one busy run sent them. The
    production layer takes all that waits in one receive, and hands each channel of the
    process its messages in order."""
    url = _redis_url()
    sent = 50

    async def scenario() -> tuple[int, list[int], list[int]]:
        web = _production_layer(url)
        worker = _production_layer(url)
        feed, other = await web.new_channel(), await web.new_channel()
        for channel in (feed, other):
            await web.group_add("run-busy", channel)
        for n in range(sent):
            await worker.group_send("run-busy", {"type": "run.event", "n": n})
        received = [(await web.receive(feed))["n"]]
        # The process's messages are all out of Redis after that one receive.
        key = web.prefix + web.non_local_name(feed)
        left = await web.connection(web.consistent_hash(feed)).zcard(key)
        received += [(await web.receive(feed))["n"] for _ in range(sent - 1)]
        others = [(await web.receive(other))["n"] for _ in range(sent)]
        await web.flush()
        await web.close_pools()
        await worker.close_pools()
        return left, received, others

    left, received, others = run(scenario())
    assert left == 0, f"{left} messages were left in Redis for later trips"
    assert received == list(range(sent))
    assert others == list(range(sent))
