"""The IoT-DETECTIVE game (thesis §3.2) in the dashboard: its page and its API.

Registered by :func:`register` in :func:`dashboards.app.create_app` (docs/game.md):

* ``GET /game`` — the page (``static/game.html``, ``game.js``, ``game.css``), linked
  from the dashboard's header.
* ``POST /api/game/rounds`` — body ``{"player": NAME}`` (optionally ``"mechanism"``
  and ``"epsilon"`` of the game's grid, else the round draws them): a new round (:mod:`dashboards.
  game_rounds`) — the released day, the regions, the four questions, the mechanism, ε
  and how it was charged. Never the true counts nor the answers.
* ``POST /api/game/rounds/{round_id}/answer`` — body ``{"answers": {task: estimate}}``:
  the points, and the truth revealed (answers, errors, the rooms' true series). A round
  is answered once; the time taken is measured by the server from the moment the round
  was sent.
* ``GET /api/game/leaderboard`` — the best players (``?limit=``, default 10).

Both roles (analyst and admin tokens) may play. Scores, rounds played and the traces of
play (``game:*`` keys of occupancy/redis_layout.py) are written through
:func:`readmodel.writer.queue_game_result` in one transaction and read through
:mod:`readmodel.reader`. Open rounds live in this process only (at most
:data:`MAX_OPEN_ROUNDS`, each for :data:`ROUND_TTL_S`): a restarted dashboard forgets
rounds in play, never scores.
"""

from __future__ import annotations

import asyncio
import logging
import re
import reprlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from dashboards import game_rounds as gr
from mechanisms.errors import InvalidParameterError
from occupancy.buildings import Site
from readmodel import reader, writer

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
MAX_OPEN_ROUNDS = 256
ROUND_TTL_S = 3600.0
#: Rounds generated at once (each simulates and releases a day in a worker thread).
MAX_GENERATING = 2
#: Round requests waiting or generating at once; more are answered 503 (Retry-After).
MAX_WAITING = 8
PLAYER_RE = re.compile(r"^[\w][\w .\-]{0,23}$")


@dataclass
class OpenRound:
    """A round sent to a player and not yet answered."""

    round: gr.Round
    player: str
    issued: float  # time.monotonic() when sent
    answered: bool = False


class GameState:
    """The game's in-process state: the site, the open rounds, the generation slots."""

    def __init__(self, site: Site, redis_of: Callable[[web.Application], Any],
                 mechanisms: list[str] | None = None) -> None:
        self.site = gr.game_site(site)
        self.redis_of = redis_of
        self.mechanisms = list(mechanisms) if mechanisms else gr.game_mechanisms()
        unknown = sorted(set(self.mechanisms) - set(gr.game_mechanisms()))
        if unknown:
            raise InvalidParameterError(
                f"game mechanisms must be among {gr.game_mechanisms()}, not {unknown}")
        self.rounds: OrderedDict[str, OpenRound] = OrderedDict()
        self.slots = asyncio.Semaphore(MAX_GENERATING)
        self.pending = 0

    def cells(self) -> list[tuple[str, float]]:
        """The (mechanism, ε) a round may draw."""
        return [(m, e) for m in self.mechanisms for e in gr.epsilons_for(m)]

    def add(self, rnd: gr.Round, player: str) -> None:
        """Keep a round until it is answered or expires (oldest dropped past the cap)."""
        self.expire()
        self.rounds[rnd.id] = OpenRound(rnd, player, time.monotonic())
        while len(self.rounds) > MAX_OPEN_ROUNDS:
            self.rounds.popitem(last=False)

    def expire(self) -> None:
        """Forget rounds older than ROUND_TTL_S."""
        now = time.monotonic()
        for rid in [k for k, v in self.rounds.items() if now - v.issued > ROUND_TTL_S]:
            del self.rounds[rid]


GAME: web.AppKey[GameState] = web.AppKey("game", GameState)


def _client(request: web.Request) -> Any:
    return request.app[GAME].redis_of(request.app)


def _player(raw: Any) -> str:
    name = raw.strip() if isinstance(raw, str) else raw
    if not isinstance(name, str) or not PLAYER_RE.match(name):
        raise InvalidParameterError(
            "player must be 1 to 24 letters, digits, spaces, '.', '_' or '-' (starting with a "
            f"letter or digit), not {reprlib.repr(raw)}")
    return name


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise InvalidParameterError("the request body must be a JSON object") from None
    if not isinstance(body, dict):
        raise InvalidParameterError(
            f"the request body must be a JSON object, not {reprlib.repr(body)}")
    return body


async def page(request: web.Request) -> web.FileResponse:
    """The game page."""
    return web.FileResponse(STATIC / "game.html")


async def new_round(request: web.Request) -> web.Response:
    """A new round for a player: the released day and the questions (no truth)."""
    game = request.app[GAME]
    body = await _body(request)
    player = _player(body.get("player"))
    mech = body.get("mechanism")
    eps = body.get("epsilon")
    if mech is None:
        cells = [c for c in game.cells() if eps is None or c[1] == eps]
        if not cells:
            raise InvalidParameterError(
                f"epsilon must be one of {sorted({e for _, e in game.cells()})}, "
                f"not {reprlib.repr(eps)}")
        mech, eps = secrets.choice(cells)
    if mech not in game.mechanisms:
        raise InvalidParameterError(
            f"mechanism must be one of {game.mechanisms}, not {reprlib.repr(mech)}")
    grid = gr.epsilons_for(mech)
    if eps is None:
        eps = secrets.choice(grid)
    # the grid only: an arbitrary ε (say 1e-4 per device-day) would make the exact
    # samplers' tables, and so one request, arbitrarily expensive
    if isinstance(eps, bool) or eps not in grid:
        raise InvalidParameterError(f"epsilon must be one of {list(grid)} for {mech}, "
                                    f"not {reprlib.repr(eps)}")
    if game.pending >= MAX_WAITING:
        return web.json_response(
            {"error": "too many rounds are being prepared; retry in a few seconds",
             "status": 503}, status=503, headers={"Retry-After": "5"})
    game.pending += 1

    async def generate() -> gr.Round:
        try:
            async with game.slots:
                return await asyncio.to_thread(gr.make_round, game.site, mechanism=mech,
                                               epsilon=float(eps))
        finally:
            game.pending -= 1

    # the task owns the slot until the thread is done: a client that hangs up cancels
    # only its wait (shield), so the 2-generating / 8-waiting limits hold
    rnd = await asyncio.shield(asyncio.ensure_future(generate()))
    played = await reader.game_rounds_played(_client(request), player)
    game.add(rnd, player)
    log.info("game: round %s for a player: %s at ε=%g", rnd.id, mech, eps)
    return web.json_response({**rnd.public(), "player": player, "rounds_played": played,
                              "bonus": gr.rounds_bonus(played)})


async def answer(request: web.Request) -> web.Response:
    """Score a round's answers, reveal the truth, update the leaderboard and the traces."""
    game = request.app[GAME]
    rid = request.match_info["round_id"]
    body = await _body(request)
    game.expire()
    open_ = game.rounds.get(rid)
    if open_ is None:
        raise web.HTTPNotFound(reason=f"round {rid!r} is unknown or expired (rounds last "
                                      f"{ROUND_TTL_S:g} s); start a new round")
    if open_.answered:
        raise web.HTTPConflict(reason=f"round {rid!r} has already been answered")
    rnd = open_.round
    answers = gr.parse_answers({t.id: t.params for t in rnd.tasks}, body.get("answers", {}))
    elapsed = time.monotonic() - open_.issued
    open_.answered = True
    client = _client(request)
    try:
        played = await reader.game_rounds_played(client, open_.player)
        result = gr.score(rnd, answers, elapsed, played)
        doc = gr.trace(rnd, open_.player, result, played, time.time())
        async with client.pipeline(transaction=True) as pipe:
            writer.queue_game_result(pipe, open_.player, result["points"], doc)
            await pipe.execute()
    except BaseException:
        open_.answered = False  # e.g. Redis down: the player may send the answers again
        raise
    game.rounds.pop(rid, None)
    return web.json_response({
        **result, "round": rid, "player": open_.player,
        "total": await reader.game_points(client, open_.player),
        "leaderboard": await reader.game_leaderboard(client, 10)})


async def leaderboard(request: web.Request) -> web.Response:
    """The best players."""
    raw = request.query.get("limit", "10")
    try:
        limit = int(raw)
    except ValueError:
        raise InvalidParameterError(f"limit must be an integer, not {reprlib.repr(raw)}") from None
    if not 1 <= limit <= 100:
        raise InvalidParameterError(f"limit must be in [1, 100], not {reprlib.repr(raw)}")
    return web.json_response({"players": await reader.game_leaderboard(_client(request), limit)})


def register(app: web.Application, site: Site, redis_of: Callable[[web.Application], Any],
             mechanisms: list[str] | None = None) -> None:
    """Add the game's page and API to the dashboard app.

    Args:
        app: the dashboard app.
        site: its site (a large campus plays its first building, :func:`game_rounds.game_site`).
        redis_of: the app's read-model client (``redis.asyncio``), once the app runs.
        mechanisms: the mechanisms rounds draw from (default: every one with a guarantee).
    """
    app[GAME] = GameState(site, redis_of, mechanisms)
    r = app.router
    r.add_get("/game", page)
    r.add_post("/api/game/rounds", new_round)
    r.add_post("/api/game/rounds/{round_id}/answer", answer)
    r.add_get("/api/game/leaderboard", leaderboard)
