"""Chat messages in a step's input or output, in the shapes runtimes send, read as a transcript
(apps.activity.step_messages); anything else is not a transcript."""

import pytest

from apps.activity.step_messages import step_messages


def _brief(messages):
    return [(m["role"], [(p["kind"], p["name"], p["text"]) for p in m["parts"]]) for m in messages]


def test_openai_chat_with_a_tool_call_and_its_answer():
    value = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function",
             "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "1", "content": "4 °C"},
    ]  # fmt: skip
    assert _brief(step_messages(value)) == [
        ("user", [("text", "", "Weather in Oslo?")]),
        ("assistant", [("call", "weather", '{"city":"Oslo"}')]),
        ("tool", [("result", "", "4 °C")]),
    ]


def test_ui_message_tool_part_carries_its_result():
    [message] = step_messages(
        {"role": "assistant", "parts": [
            {"type": "tool-search", "toolCallId": "a", "input": {"q": "x"}, "output": [1]}]}
    )  # fmt: skip
    [part] = message["parts"]
    assert (part["kind"], part["name"], part["result"]) == ("call", "search", "[\n  1\n]")


def test_an_unknown_role_is_shown_by_its_name_but_styled_as_other():
    [message] = step_messages([{"role": "<b>x</b>", "content": "hi"}])
    assert (message["role"], message["label"]) == ("other", "<b>x</b>")


@pytest.mark.parametrize(
    "value",
    [None, "plain text", {"order": 1}, [1, 2], [{"role": "user"}], {"messages": "no"}, []],
)
def test_anything_else_is_not_a_transcript(value):
    assert step_messages(value) is None
