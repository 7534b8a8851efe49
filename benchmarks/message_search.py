"""Word search over N messages (and steps): p50 / p95 through the API (issue 36, item 3).

    nice -n 10 uv run python benchmarks/message_search.py [--messages 1000000] [--steps 200000]
        [--requests 40]

A dedicated PostgreSQL database (BENCH_SEARCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/agent_console_search) holds one Agent's N messages, ten per
conversation, and `--steps` tool steps (five per run), filled set-based: a few hundred distinct
texts in eight languages (English 40 %, Spanish, German, French, Russian and Chinese 10 % each,
Arabic and Japanese 5 %), each indexed once by the recording's own code
(apps.activity.search_index: language detection, CJK pairs), are spread over the rows by a hash
of the row number, each row with an order number of its own ("ORD-123456": a million distinct
words) and one row in 9,973 with the rare word "kumquat". The GIN indexes are dropped for the
fill and built after it (timed), then VACUUM ANALYZE. The fill is kept for the next run when
the counts are already there.

Each query is requested `--requests` times (after three warm-up requests) through Django's test
client — key authentication, the Redis rate limiter, the view and its SQL, as a request from
outside gets them, without a socket — on GET /v1/conversations?q=, GET /v1/search/messages?q=,
GET /v1/runs?q= and GET /v1/search/steps?q=, and the p50 / p95 in milliseconds are printed
with the rows the first page returned and the load average.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import benchmark_environment  # noqa: E402 - after the path is set

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/agent_console_search"
AGENT = "agt_search"
RARE_EVERY = 9973

# Sentences per language; a text is two of them (every ordered pair).
SENTENCES = {
    "en": (
        "Where is my order? It was supposed to arrive last week.",
        "I would like a refund for the blue jacket, it is too small.",
        "Can you change the delivery address to my office in Leeds?",
        "The payment failed twice and my card was still charged.",
        "How long does shipping to Canada usually take?",
        "Please cancel the subscription before the next billing date.",
        "The assistant suggested a bigger size but the order was already shipped.",
        "Thanks, the tracking number works now and the parcel is on its way.",
    ),
    "es": (
        "¿Dónde está mi pedido? Debía llegar la semana pasada.",
        "Quiero un reembolso por la chaqueta azul, es demasiado pequeña.",
        "¿Pueden cambiar la dirección de entrega a mi oficina?",
        "El pago falló dos veces y aun así me cobraron la tarjeta.",
    ),
    "de": (
        "Wo ist meine Bestellung? Sie sollte letzte Woche ankommen.",
        "Ich möchte eine Rückerstattung für die blaue Jacke, sie ist zu klein.",
        "Können Sie die Lieferadresse auf mein Büro ändern?",
        "Die Zahlung ist zweimal fehlgeschlagen und die Karte wurde belastet.",
    ),
    "fr": (
        "Où est ma commande ? Elle devait arriver la semaine dernière.",
        "Je voudrais un remboursement pour la veste bleue, elle est trop petite.",
        "Pouvez-vous changer l'adresse de livraison pour mon bureau ?",
        "Le paiement a échoué deux fois et ma carte a quand même été débitée.",
    ),
    "ru": (
        "Где мой заказ? Он должен был прийти на прошлой неделе.",
        "Я хочу вернуть деньги за синюю куртку, она слишком маленькая.",
        "Можно изменить адрес доставки на мой офис?",
        "Оплата дважды не прошла, но деньги с карты списали.",
    ),
    "zh": (
        "我的订单在哪里？上周就应该到了。",
        "我想为蓝色夹克申请退款，尺码太小了。",
        "可以把送货地址改到我的办公室吗？",
        "付款失败了两次，但是银行卡还是被扣款了。",
    ),
    "ar": (
        "أين طلبي؟ كان من المفترض أن يصل الأسبوع الماضي.",
        "أريد استرداد المبلغ مقابل السترة الزرقاء، إنها صغيرة جدا.",
        "هل يمكنكم تغيير عنوان التوصيل إلى مكتبي؟",
    ),
    "ja": (
        "注文した商品はどこですか？先週届くはずでした。",
        "青いジャケットの返金をお願いします。サイズが小さすぎます。",
        "配送先住所をオフィスに変更できますか？",
    ),
}
# Percent of rows per language (sums to 100).
SHARES = {"en": 40, "es": 10, "de": 10, "fr": 10, "ru": 10, "zh": 10, "ar": 5, "ja": 5}

CASES = [
    ("common word: order", "order"),
    ("common, two words: refund jacket", "refund jacket"),
    ("stemmed: refunds", "refunds"),
    ('phrase: "blue jacket"', '"blue jacket"'),
    ("rare word: kumquat (1 in 9,973)", "kumquat"),
    ("one row: ORD-777777", "ORD-777777"),
    ("Russian: заказа", "заказа"),
    ("Arabic: طلبي", "طلبي"),
    ("Chinese: 订单", "订单"),
    ("Japanese: 返金", "返金"),
    ("found nowhere: xylophonequux", "xylophonequux"),
]


def _pool() -> list[tuple[str, str, str, int]]:
    """(text, search_text, search_config, weight): every ordered pair of a language's
    sentences, indexed by the recording's code; the weights give the languages their shares."""
    from apps.activity.search_index import message_search_fields

    pool = []
    for language, sentences in SENTENCES.items():
        pairs = [(a, b) for a in sentences for b in sentences if a != b]
        for a, b in pairs:
            text = f"{a} {b}"
            fields = message_search_fields([{"type": "text", "text": text}])
            weight = max(1, round(SHARES[language] * 100 / len(pairs)))
            pool.append((text, fields["search_text"], fields["search_config"], weight))
    return pool


def _counts(cursor) -> tuple[int, int]:
    cursor.execute("SELECT count(*) FROM activity_message WHERE agent_id = %s", [AGENT])
    messages = cursor.fetchone()[0]
    cursor.execute("SELECT count(*) FROM activity_runstep WHERE agent_id = %s", [AGENT])
    return messages, cursor.fetchone()[0]


_INDEXES = (("activity_message", "msg_search"), ("activity_runstep", "step_search"))


def fill(messages: int, steps: int, *, refill: bool = False) -> None:
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        if _counts(cursor) == (messages, steps) and not refill:
            print(f"{messages:,} messages and {steps:,} steps already there", flush=True)
            return
    from apps.workspaces.models import Agent, Workspace

    workspace, _ = Workspace.objects.get_or_create(id="ws_search", defaults={"name": "Search"})
    Agent.objects.get_or_create(id=AGENT, defaults={"workspace": workspace, "name": "Search"})
    pool = _pool()
    started = time.monotonic()
    params = {"agent": AGENT, "anchor": timezone.now(), "n": messages, "steps": steps,
              "rare": RARE_EVERY}  # fmt: skip
    with transaction.atomic(), connection.cursor() as cursor:
        for table in ("activity_runstep", "activity_message", "activity_run",
                      "activity_conversation"):  # fmt: skip
            cursor.execute(f"DELETE FROM {table} WHERE agent_id = %s", [AGENT])
        for _table, index in _INDEXES:
            cursor.execute(f"DROP INDEX IF EXISTS {index}")
        # The pool, each text as many times as its weight: row g takes entry hash(g) mod size.
        cursor.execute(
            "CREATE TEMP TABLE pool (i serial, body text, search text, config text) ON COMMIT DROP"
        )
        cursor.executemany(
            "INSERT INTO pool (body, search, config) SELECT %s, %s, %s FROM generate_series(1, %s)",
            pool,
        )
        cursor.execute("SELECT count(*) FROM pool")
        params["size"] = cursor.fetchone()[0]
        cursor.execute(
            "CREATE OR REPLACE FUNCTION pg_temp.h(g bigint) RETURNS bigint "
            "LANGUAGE sql IMMUTABLE AS $$ SELECT abs(hashtext('m' || g)::bigint) $$"
        )
        at = "%(anchor)s::timestamptz - (%(n)s - g)::float8 / %(n)s * interval '90 days'"
        cursor.execute(
            "INSERT INTO activity_conversation (id, agent_id, title, status, created_at, "
            f"updated_at) SELECT 'conv_s' || c, %(agent)s, 'Chat ' || c, 'completed', "
            f"{at.replace('g)', '10 * c)')}, {at.replace('g)', '(10 * c + 9))')} "
            "FROM generate_series(0, (%(n)s - 1) / 10) c",
            params,
        )
        # The text with its order number (and the rare word): the same words in both columns.
        extra = "' Order ORD-' || g || CASE WHEN g %% %(rare)s = 0 THEN ' kumquat' ELSE '' END"
        cursor.execute(
            "INSERT INTO activity_message (id, agent_id, conversation_id, role, parts, "
            "created_at, search_text, search_config) "
            "SELECT 'msg_s' || g, %(agent)s, 'conv_s' || (g / 10), "
            "CASE WHEN g %% 2 = 0 THEN 'user' ELSE 'assistant' END, "
            f"jsonb_build_array(jsonb_build_object('type', 'text', 'text', p.body || {extra})), "
            f"{at}, p.search || {extra}, p.config "
            "FROM generate_series(0, %(n)s - 1) g JOIN pool p ON p.i = pg_temp.h(g) %% %(size)s + 1 "
            # In g's order: rows follow time as recording writes them (a hash join would
            # otherwise group them by text, the newest rows all of one).
            "ORDER BY g",
            params,
        )
        cursor.execute(
            "INSERT INTO activity_run (id, agent_id, conversation_id, request_id, status, "
            "sdk_version, protocol_version, tool_names, failed_tool_names, component_kinds, "
            f"created_at, updated_at) SELECT 'run_s' || r, %(agent)s, 'conv_s' || (r %% "
            f"((%(n)s - 1) / 10 + 1)), 'req_' || r, 'completed', '5.0.12', 1, '[]', '[]', '[]', "
            f"{at.replace('g)', 'r * 5)')}, {at.replace('g)', 'r * 5)')} "
            "FROM generate_series(0, (%(steps)s - 1) / 5) r",
            params,
        )
        cursor.execute(
            "INSERT INTO activity_runstep (id, agent_id, run_id, kind, name, status, started_at, "
            "input, output, documents, attributes, truncated, created_at, updated_at, "
            "search_text, search_config) "
            "SELECT 'st_s' || g, %(agent)s, 'run_s' || (g / 5), 'tool', 'lookup_order', "
            f"'completed', {at}, jsonb_build_object('order', 'ORD-' || g), "
            "jsonb_build_object('answer', p.body), '[]', '{}', '[]', "
            f"{at}, {at}, 'ORD-' || g || ' ' || p.search, p.config "
            "FROM generate_series(0, %(steps)s - 1) g "
            "JOIN pool p ON p.i = pg_temp.h(g + 7) %% %(size)s + 1 ORDER BY g",
            params,
        )
    filled = time.monotonic()
    print(f"filled {messages:,} messages, {steps:,} steps in {filled - started:.0f} s", flush=True)
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '256MB'")
        for table, index in _INDEXES:
            cursor.execute(
                f"CREATE INDEX {index} ON {table} USING gin (search_vector) WITH (fastupdate = on)"
            )
        print(f"GIN indexes built in {time.monotonic() - filled:.0f} s", flush=True)
        for table in ("activity_message", "activity_runstep", "activity_run",
                      "activity_conversation"):  # fmt: skip
            cursor.execute(f"VACUUM ANALYZE {table}")


def measure(path: str, requests: int, key: str) -> None:
    from django.test import Client

    client = Client()
    headers = {"Authorization": f"Bearer {key}"}
    print(f"\nGET {path}?q=                     p50 ms   p95 ms   rows", flush=True)
    for label, query in CASES:
        samples = []
        rows = 0
        for index in range(requests + 3):
            started = time.perf_counter()
            response = client.get(path, {"q": query}, headers=headers)
            elapsed = (time.perf_counter() - started) * 1000
            assert response.status_code == 200, (label, response.content[:300])
            rows = len(response.json()["data"])
            if index >= 3:
                samples.append(elapsed)
        samples.sort()
        p95 = samples[max(0, int(len(samples) * 0.95 + 0.5) - 1)]
        print(f"  {label:34} {statistics.median(samples):7.1f} {p95:8.1f} {rows:6}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--refill", action="store_true", help="fill again even if the counts match")
    args = parser.parse_args()
    benchmark_environment(os.environ.get("BENCH_SEARCH_DATABASE_URL", DEFAULT_URL))
    import django

    django.setup()
    fill(args.messages, args.steps, refill=args.refill)
    from apps.workspaces.models import Agent
    from apps.workspaces.services import api_key_create

    _, key = api_key_create(
        agent=Agent.objects.get(pk=AGENT), name="bench", scopes=["runs:read", "conversations:read"]
    )
    print(
        f"{args.messages:,} messages, {args.steps:,} steps; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    for path in ("/v1/conversations", "/v1/search/messages", "/v1/runs", "/v1/search/steps"):
        measure(path, args.requests, key)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
