"""Applying user, conversation and message records to the batch's rows in memory, with the
checks one record at a time would make (a user's external id held by one user only, a message's
run in the message's own conversation, a message that never moves).
"""

from apps.activity.models import Conversation, EndUser, Message, Run
from apps.activity.recording.batch import (
    CREATED,
    UNCHANGED,
    UPDATED,
    _apply,
    _apply_search,
    _require,
)
from apps.activity.recording.reading import BatchReads
from apps.activity.search_index import message_search_fields
from apps.common.errors import BadRequest

_USER_FIELDS = ("external_id", "identity_type", "display_name", "email", "avatar_url")
_CONVERSATION_FIELDS = ("title", "status", "source")
_MESSAGE_FIELDS = ("role", "parts", "source_id", "run_id", "created_at", "updated_at")


class ConversationRecords(BatchReads):
    """The `user`, `conversation` and `message` records of a batch."""

    def _user(self, data: dict, label: str) -> str:
        user = self.get(EndUser, data.get("id"), lock=True)
        external_id = data.get("external_id")
        if external_id is not None:
            holder = self.user_by_external_id(external_id)
            if holder is not None and "id" in data and holder.id != data["id"]:
                raise BadRequest(
                    f"{label}.external_id: already recorded for user {holder.id!r}, "
                    f"not {data['id']!r}."
                )
            user = user or holder
        if user is None:
            last_seen = data.get("last_seen_at") or self.now
            user = EndUser(
                agent=self.agent,
                first_seen_at=min(data.get("first_seen_at") or last_seen, last_seen),
                last_seen_at=last_seen,
            )
            if "id" in data:
                user.id = data["id"]
            _apply(user, data, _USER_FIELDS)
            self._create(EndUser, user, label=label)
            if user.external_id is not None:
                self.by_external[user.external_id] = user
            return CREATED
        previous_external = user.external_id
        changed = _apply(user, data, _USER_FIELDS)
        seen = data.get("last_seen_at")
        if seen is not None and seen > user.last_seen_at:
            user.last_seen_at = seen
            changed.append("last_seen_at")
        # A sighting earlier than the first one known moves first_seen_at back.
        sightings = [data[name] for name in ("first_seen_at", "last_seen_at") if data.get(name)]
        first = min(sightings) if sightings else None
        if first is not None and first < user.first_seen_at:
            user.first_seen_at = first
            changed.append("first_seen_at")
        if not changed:
            return UNCHANGED
        if "external_id" in changed:
            if user.external_id is not None:
                holder = self.user_by_external_id(user.external_id)
                if holder is not None and holder is not user:
                    raise BadRequest(f"{label}.external_id: already recorded for another user.")
                self.by_external[user.external_id] = user
            if previous_external is not None:
                self.by_external[previous_external] = None
        self._changed(EndUser, user, changed)
        return UPDATED

    def _conversation(self, data: dict, label: str) -> str:
        conversation = self.get(Conversation, data.get("id"), lock=True)
        if "user_id" in data:
            self._user_of(data["user_id"], label=label)
        if conversation is None:
            created_at = data.get("created_at") or self.now
            conversation = Conversation(
                agent=self.agent,
                created_at=created_at,
                updated_at=data.get("updated_at") or created_at,
            )
            if "id" in data:
                conversation.id = data["id"]
            _apply(conversation, data, (*_CONVERSATION_FIELDS, "user_id"))
            self._create(Conversation, conversation, label=label)
            return CREATED
        changed = _apply(conversation, data, (*_CONVERSATION_FIELDS, "user_id", "created_at"))
        self._stamp_updated_at(conversation, data, changed)
        if not changed:
            return UNCHANGED
        self._changed(Conversation, conversation, changed)
        return UPDATED

    def _message_run_check(self, data: dict, conversation_id: str, *, label: str) -> None:
        """A message's run must be a run of the Agent in the message's own conversation."""
        run_id = data.get("run_id")
        if run_id is None:
            return
        run = self.get(Run, run_id)
        if run is None:
            raise BadRequest(f"{label}.run_id: no run {run_id!r} recorded for this Agent.")
        if run.conversation_id != conversation_id:
            raise BadRequest(
                f"{label}.run_id: run {run_id!r} belongs to conversation "
                f"{run.conversation_id!r}, not {conversation_id!r}."
            )

    def _message(self, data: dict, label: str) -> str:
        message = self.get(Message, data.get("id"), lock=True)
        if message is None:
            _require(data, ("conversation_id", "role"), label=label, kind="message")
            conversation = self._conversation_of(data["conversation_id"], label=label)
            message = Message(
                agent=self.agent,
                conversation_id=conversation.id,
                parts=[],
                created_at=data.get("created_at") or self.now,
            )
            if "id" in data:
                message.id = data["id"]
            self._message_run_check(data, conversation.id, label=label)
            _apply(message, data, _MESSAGE_FIELDS)
            _apply_search(message, message_search_fields(message.parts))
            self._create(Message, message, label=label)
            return CREATED
        if "conversation_id" in data and data["conversation_id"] != message.conversation_id:
            raise BadRequest(
                f"{label}.conversation_id: message {message.id!r} belongs to conversation "
                f"{message.conversation_id!r} and cannot move."
            )
        self._message_run_check(data, message.conversation_id, label=label)
        changed = _apply(message, data, _MESSAGE_FIELDS)
        if not changed:
            return UNCHANGED
        if "parts" in changed:
            changed += _apply_search(message, message_search_fields(message.parts))
        self._changed(Message, message, changed)
        return UPDATED
