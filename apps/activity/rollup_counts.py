"""How many rows the Overview's per-day groups hold (overview_rollup.COUNTED: one row per end user
or conversation and day), kept in `ov_count` rows (key: the group counted) as the rollup's writes
insert and remove those rows — so the active users and conversations per day are O(days) rows
to read, not O(days x users).

A count is a sum like any other: split in stripes (a recording adds to the stripe it claimed),
read summed. On PostgreSQL the rollup's upsert says which rows it inserted (`xmax = 0`, in its
RETURNING) and a further part of the same statement adds them (`INSERTED_SQL`); the statement
removing emptied rows returns those it removed and `counts_add` takes them away. The unique
index serialises two writers of one row, so each insertion and removal is seen by exactly one.
"""

from collections import Counter
from datetime import date

from django.db import connection

from apps.activity.models import Rollup
from apps.activity.overview_rollup import COUNTED, COUNTS

# A part of analytics.rollup_apply's statement, after its `counters` upsert (which returns
# "group", day and whether it inserted the row) and `claimed` stripe. Params: agent, COUNTS,
# COUNTED.
INSERTED_SQL = (
    ', counted AS (INSERT INTO activity_rollup (agent_id, "group", day, key, stripe, count, '
    "failed, input_tokens, output_tokens, total_tokens, credits) SELECT %s, %s, day, "
    '"group", (SELECT stripe FROM claimed), count(*), 0, 0, 0, 0, 0 FROM counters '
    'WHERE inserted AND "group" = ANY(%s) GROUP BY day, "group" '
    'ON CONFLICT (agent_id, "group", day, key, stripe) '
    "DO UPDATE SET count = activity_rollup.count + excluded.count)"
)
RETURNING_SQL = ' RETURNING "group", day, (xmax = 0) AS inserted'

_ADD_SQL = (
    'INSERT INTO activity_rollup (agent_id, "group", day, key, stripe, count, failed, '
    "input_tokens, output_tokens, total_tokens, credits) SELECT %s, %s, v.day, v.key, %s, v.n, "
    "0, 0, 0, 0, 0 FROM unnest(%s::date[], %s::text[], %s::bigint[]) AS v(day, key, n) "
    'ON CONFLICT (agent_id, "group", day, key, stripe) '
    "DO UPDATE SET count = activity_rollup.count + excluded.count RETURNING row, count"
)


def counts_add(agent_id: str, stripe: int, changes: Counter[tuple[str, date]]) -> None:
    """Add `changes` ({(counted group, day): rows inserted, or removed when negative}) to the
    Agent's counts in `stripe`; a count left at nothing is removed."""
    changes = Counter({key: n for key, n in changes.items() if n})
    if not changes:
        return
    if connection.vendor == "postgresql":
        items = sorted(changes.items())
        days = [day for (_group, day), _n in items]
        keys = [group for (group, _day), _n in items]
        with connection.cursor() as cursor:
            cursor.execute(_ADD_SQL, [agent_id, COUNTS, stripe, days, keys, [n for _k, n in items]])
            emptied = [row for row, count in cursor.fetchall() if count == 0]
            if emptied:
                cursor.execute("DELETE FROM activity_rollup WHERE row = ANY(%s)", [emptied])
        return
    for (group, day), n in sorted(changes.items()):
        row, _ = Rollup.objects.get_or_create(
            agent_id=agent_id, group=COUNTS, day=day, key=group, stripe=stripe
        )
        row.count += n
        if row.count:
            row.save()
        else:
            row.delete()


def counted(rows) -> Counter[tuple[str, date]]:
    """{(group, day): how many} of (group, day, ...) rows of the counted groups."""
    return Counter((group, day) for group, day, *_rest in rows if group in COUNTED)
