"""The shapes of A2M 0.1 records, params and results, as TypedDicts.

Results are the server's JSON objects as received, so a field this client
does not know is still there (a client MUST tolerate unknown fields, §2) and
timestamps are the RFC 3339 strings the server sent (§3.3). The classes here
only tell a type checker which fields the specification defines.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, TypedDict, Union

#: An RFC 3339 UTC timestamp with milliseconds, e.g. "2026-07-28T10:15:30.123Z".
Timestamp = str
Json = Any
#: §5.2: equality on record fields, then metadata; a list means "any of".
Where = Dict[str, Json]


class _RecordBase(TypedDict):
    id: str
    content: str
    created_at: Timestamp


class MemoryRecord(_RecordBase, total=False):
    """A record as the server returns it (§3.1)."""

    role: str
    metadata: Dict[str, Json]
    group: Optional[str]
    tier: str  # tiers
    salience: float  # salience
    accessed_at: Optional[Timestamp]
    access_count: int
    owner: Optional[str]  # scopes
    session: Optional[str]  # sessions
    key: Optional[str]  # keys
    revision: int
    embedding: List[float]  # embeddings, only when asked for
    uri: Optional[str]  # external
    media_type: Optional[str]
    score: float  # recall only: ranking information within one result (§5.3)


class _NewRecordBase(TypedDict):
    content: str


class NewRecord(_NewRecordBase, total=False):
    """A record to write (§4.2)."""

    id: str  # makes the write idempotent (§3.2)
    role: str
    metadata: Dict[str, Json]
    group: str
    tier: str
    salience: float
    owner: str
    session: str
    key: str
    embedding: List[float]
    uri: str
    media_type: str


class PromptOptions(TypedDict, total=False):
    """§4.16: how to render the records as text."""

    method: str  # template | model | none
    style: str  # auto | facts | transcript
    model: str
    budget: int
    cite: bool


PromptOption = Union[bool, PromptOptions]


class TierInfo(TypedDict, total=False):
    name: str
    count: int
    kind: str
    capacity: Optional[int]
    spill_to: Optional[str]
    promote_to: Optional[str]
    shared: bool
    per_session: bool


class _DescribeBase(TypedDict):
    protocol: str
    name: str
    capabilities: List[str]
    methods: List[str]


class DescribeResult(_DescribeBase, total=False):
    limits: Dict[str, int]
    tiers: List[TierInfo]
    embeddings: Dict[str, Json]
    events: Dict[str, Json]  # carries push (bool)
    summarize: Dict[str, Json]  # carries model
    prompt: Dict[str, Json]  # carries styles, methods, model


class RememberResult(TypedDict):
    ids: List[str]


class _RecordsBase(TypedDict):
    records: List[MemoryRecord]


class RecordsResult(_RecordsBase, total=False):
    """recall and timeline; prompt and prompt_ids only when a prompt was asked for."""

    prompt: str
    prompt_ids: List[str]


class ForgetResult(TypedDict):
    forgotten: int


class PromoteResult(TypedDict):
    promoted: int


class ConsolidateResult(TypedDict):
    moved: int
    promoted: int
    dropped: int
    summarized: int
    counts: Dict[str, int]


class ReinforceResult(TypedDict):
    reinforced: int


class FetchResult(TypedDict):
    record: Optional[MemoryRecord]


class _SessionBase(TypedDict):
    session: str
    records: int


class SessionInfo(_SessionBase, total=False):
    tiers: Dict[str, int]
    opened_at: Timestamp
    touched_at: Timestamp


class SessionListResult(TypedDict):
    sessions: List[SessionInfo]


class SessionCloseResult(ConsolidateResult):
    closed: str
    flushed: int


class _EventBase(TypedDict):
    kind: str  # written | forgotten | promoted | consolidated | session_closed | the server's own
    at: Timestamp


class MemoryEvent(_EventBase, total=False):
    """An event (§4.12)."""

    id: str
    ids: List[str]
    tier: str
    session: Optional[str]
    key: Optional[str]
    revision: int
    count: int
    moved: int
    promoted: int
    dropped: int
    summarized: int


class _EventsBase(TypedDict):
    events: List[MemoryEvent]
    cursor: str  # opaque: never parse it (§4.12)


class EventsResult(_EventsBase, total=False):
    more: bool
    reset: bool


class SubscribeResult(TypedDict):
    subscribed: bool


class SummarizeResult(TypedDict):
    records: List[MemoryRecord]
    read: int
    written: int


__all__ = [
    "ConsolidateResult", "DescribeResult", "EventsResult", "FetchResult", "ForgetResult", "Json",
    "MemoryEvent", "MemoryRecord", "NewRecord", "PromoteResult", "PromptOption", "PromptOptions",
    "RecordsResult", "ReinforceResult", "RememberResult", "SessionCloseResult", "SessionInfo",
    "SessionListResult", "SubscribeResult", "SummarizeResult", "TierInfo", "Timestamp", "Where",
]
