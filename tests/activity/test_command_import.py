"""`manage.py import_activity FILE.jsonl`: the ingest format, line by line, with a summary."""

import io

import orjson
import pytest
from django.core.management import CommandError, call_command

from apps.activity.models import Conversation, EndUser, Message, Run
from tests.activity.test_services_recording import base_records

pytestmark = pytest.mark.django_db


def write_jsonl(path, records, extra_lines=()):
    lines = [orjson.dumps(record).decode() for record in records] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n")
    return path


def run(path, *args):
    out = io.StringIO()
    call_command("import_activity", str(path), *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.smoke
def test_import_records_lines_and_prints_a_summary(tmp_path, agent):
    path = write_jsonl(tmp_path / "a.jsonl", base_records())
    output = run(path, "--agent", agent.pk)
    assert "4 created, 0 updated, 0 unchanged, 0 rejected" in output
    assert EndUser.objects.filter(agent=agent).count() == 1
    assert Message.objects.filter(agent=agent).count() == 1
    assert "0 created, 0 updated, 4 unchanged, 0 rejected" in run(path, "--agent", agent.pk)


def test_bad_lines_are_rejected_with_reasons_and_the_rest_recorded(tmp_path, agent):
    records = base_records()
    records.append({"type": "run", "id": "run_1", "status": "completed", "input_tokens": 5})
    records.append({"type": "run", "id": "run_1", "status": "streaming"})
    path = write_jsonl(tmp_path / "b.jsonl", records, extra_lines=["{not json", '{"type": "x"}'])
    output = run(path, "--agent", agent.pk)
    assert "4 created, 1 updated, 0 unchanged, 3 rejected" in output
    assert "rejected line 6.status: run 'run_1' already ended" in output
    assert "rejected line 7: malformed JSON" in output
    assert "rejected line 8.type" in output
    assert Run.objects.get(id="run_1").status == "completed"
    assert Conversation.objects.count() == 1


def test_agent_is_needed_when_several_exist(tmp_path, agent, other_agent):
    path = write_jsonl(tmp_path / "c.jsonl", base_records())
    with pytest.raises(CommandError, match="--agent"):
        run(path)
    with pytest.raises(CommandError, match="No Agent"):
        run(path, "--agent", "agt_nope")
